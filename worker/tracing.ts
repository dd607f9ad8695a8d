/**
 * OpenTelemetry tracing of a service process (the gateway, the worker): one trace from the HTTP
 * request through the workflow start, the workflow, each step and each git or ssh command, sent
 * over OTLP/HTTP (JSON) to `OTEL_EXPORTER_OTLP_ENDPOINT` (`…/v1/traces`) or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as given). The other standard variables apply
 * (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`, `OTEL_EXPORTER_OTLP_HEADERS`).
 *
 * Off (neither variable set), `startTracing` answers null at once: no SDK module is loaded (they
 * are imported inside the enabled branch only), no interceptor is registered, no hook is added to
 * the gateway. What stays is @opentelemetry/api's no-op, which the git and ssh spans call into:
 * a span started there is a shared non-recording object and nothing more.
 */
import { context, trace } from '@opentelemetry/api';
import type { ClientInterceptors } from '@temporalio/client';
import type { OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type { ActivityInboundCallsInterceptor, InjectedSink, WorkerInterceptors } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { idAttributes, idsIn, idsOf, withIds } from '../domain/trace-ids';

export interface Tracing {
  /** For a Temporal client: each workflow start (signal, update, query) carries the caller's trace context. */
  client: ClientInterceptors;
  /** For a worker: a span per activity (its parent from the workflow's header), the same client interceptors for the activities' client. */
  worker: Pick<WorkerInterceptors, 'client' | 'activity'>;
  /** The sink the workflow spans leave the sandbox by, into this process's exporter. */
  workflowSpans: InjectedSink<OpenTelemetryWorkflowExporter>;
  /** Sends the spans still buffered and stops; called once, as the process ends. */
  shutdown(): Promise<void>;
}

export type ServiceName = 'tws-gateway' | 'tws-worker';

/** Told of each batch the exporter could not send (worker/span-export-failures.ts counts and says it). */
export type ExportFailureReport = (failedSpans: number, error: Error | undefined) => void;

function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Installs the tracer provider of this process when an endpoint is configured; null (and
 * nothing loaded) when not. `hostId` is the service's host (TWS_HOST_ID), the resource's `host.id`.
 */
export async function startTracing(
  serviceName: ServiceName,
  hostId: string,
  env: NodeJS.ProcessEnv = process.env,
  onExportFailure?: ExportFailureReport,
): Promise<Tracing | null> {
  if (!tracingConfigured(env)) return null;
  // Required, not imported: esbuild keeps an import() as Node's ESM loader, which would load
  // the SDK's ESM builds beside the CommonJS @opentelemetry/api the rest of the process uses.
  const { NodeTracerProvider } =
    require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor } =
    require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { Resource, envDetectorSync } =
    require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { ATTR_SERVICE_NAME } =
    require('@opentelemetry/semantic-conventions') as typeof import('@opentelemetry/semantic-conventions');
  const { OpenTelemetryWorkflowClientInterceptor } =
    require('@temporalio/interceptors-opentelemetry/lib/client') as typeof import('@temporalio/interceptors-opentelemetry/lib/client');
  const otelWorker =
    require('@temporalio/interceptors-opentelemetry/lib/worker') as typeof import('@temporalio/interceptors-opentelemetry/lib/worker');
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the defaults.
  const resource = Resource.default()
    .merge(new Resource({ [ATTR_SERVICE_NAME]: serviceName, 'host.id': hostId }))
    .merge(envDetectorSync.detect());
  // The exporter reads its endpoint, headers and timeout from the environment; batching keeps
  // the export off every span's path (OTEL_BSP_SCHEDULE_DELAY, default 5 s). A batch it could not
  // send is reported (counted and said: worker/span-export-failures.ts).
  const exporter = new OTLPTraceExporter();
  const processor = new BatchSpanProcessor(onExportFailure ? reportingExporter(exporter, onExportFailure) : exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // The async-local context manager and the W3C trace-context and baggage propagators.
  provider.register();

  const clientInterceptors = (): ClientInterceptors => ({ workflow: [new OpenTelemetryWorkflowClientInterceptor()] });
  return {
    client: clientInterceptors(),
    worker: {
      client: clientInterceptors(),
      activity: [
        (ctx) => ({
          inbound: new otelWorker.OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new otelWorker.OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
        // Inside the activity's span (interceptors run first to last, outermost first).
        () => ({ inbound: stepIds }),
      ],
    },
    workflowSpans: withRunAttributesOnly(otelWorker.makeWorkflowExporter(processor, resource)),
    shutdown: () => provider.shutdown(),
  };
}

/** The exporter, each batch it could not send reported with the number of its spans. */
function reportingExporter(inner: SpanExporter, report: ExportFailureReport): SpanExporter {
  return {
    export(spans, done) {
      inner.export(spans, (result) => {
        // 0 is ExportResultCode.SUCCESS (@opentelemetry/core, not loaded while tracing is off).
        if (result.code !== 0) report(spans.length, result.error);
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * Names a step's task, session and operation on its span, and passes them on (as baggage) to
 * the git and ssh commands it runs: those of its workflow, and those its input names itself.
 */
const stepIds: ActivityInboundCallsInterceptor = {
  execute(input, next) {
    const ids = { ...idsIn(context.active()), ...idsOf(input.args[0]) };
    trace.getActiveSpan()?.setAttributes(idAttributes(ids));
    return context.with(withIds(context.active(), ids), () => next(input));
  },
};

/**
 * The SDK's sink copies the whole WorkflowInfo onto each workflow span (its memo, search
 * attributes, last result and last failure's message among them); a span here says which run it
 * is and no more.
 */
function withRunAttributesOnly(
  sink: InjectedSink<OpenTelemetryWorkflowExporter>,
): InjectedSink<OpenTelemetryWorkflowExporter> {
  return {
    ...sink,
    export: {
      ...sink.export,
      fn: (info, spans) => {
        const { workflowId, runId, workflowType, taskQueue, namespace, attempt } = info;
        return sink.export.fn(
          { workflowId, runId, workflowType, taskQueue, namespace, attempt } as WorkflowInfo,
          spans,
        );
      },
    },
  };
}

/**
 * The workflow-span sink of a worker whose tracing is off: a run started traced (by a gateway
 * that traces) still hands its spans out of the sandbox, and they are dropped here rather than
 * logged as calls to a sink nobody registered.
 */
export const WORKFLOW_SPANS_DROPPED: InjectedSink<OpenTelemetryWorkflowExporter> = { export: { fn: () => {} } };

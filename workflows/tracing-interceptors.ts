/**
 * The workflows' part of tracing: Temporal's OpenTelemetry workflow interceptors, in every bundle
 * (worker/worker.ts `bundleWorkflows`) and awake only in a run whose start carried a trace
 * context (the `_tracer-data` header the gateway's client interceptor writes when tracing is on).
 *
 * Why gated rather than always on, or a bundle per setting: the bundle is one file whatever the
 * environment says, and a run's behaviour must follow from its history alone, never from how
 * the worker that replays it was started. The header is in the history, so a run traced once is
 * traced on every replay, and a run started untraced (tracing off, a Schedule's run, every
 * history under test/histories) never touches OpenTelemetry: no span, no header added to its
 * activities, and the OpenTelemetry modules not even evaluated (required below on the first
 * traced call: the sandbox evaluates a run's modules afresh for each run).
 *
 * Measured, replaying the 46 recorded histories (docs/operating.md, "Traces"): asleep, 36–50 ms a history
 * against 37–47 ms with no interceptor module (noise); the SDK's own module, always on, 57–74 ms,
 * and 3 histories failed to replay: its span ids are drawn from the workflow's seeded
 * Math.random, so every uuid4() after them changed (the child workflow ids of idle release,
 * quick-chat expiry and a cascade archive). In a traced run that draw is in every replay too.
 *
 * A traced run also names its task, session and operation (from its input) on its span and in
 * the baggage its activities receive, so each step and each git or ssh command under it carries
 * them (domain/trace-ids.ts).
 */
import type {
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptorsFactory,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

type OtelWorkflow = typeof import('@temporalio/interceptors-opentelemetry/lib/workflow');
type TraceApi = typeof import('@opentelemetry/api');
type TraceIdsModule = typeof import('../domain/trace-ids');

/** The header the interceptors carry the trace context in (`TRACE_HEADER` of the SDK's instrumentation module). */
const TRACE_HEADER = '_tracer-data';

const carriesTrace = (headers: Record<string, unknown>): boolean => TRACE_HEADER in headers;

interface Traced {
  inbound: InstanceType<OtelWorkflow['OpenTelemetryInboundInterceptor']>;
  outbound: InstanceType<OtelWorkflow['OpenTelemetryOutboundInterceptor']>;
  internals: InstanceType<OtelWorkflow['OpenTelemetryInternalsInterceptor']>;
  api: TraceApi;
  ids: TraceIdsModule;
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  let traced: Traced | undefined;
  // Required here, not imported: evaluated only in a traced run (above).
  const tracing = (): Traced =>
    (traced ??= (() => {
      const otel = require('@temporalio/interceptors-opentelemetry/lib/workflow') as OtelWorkflow;
      return {
        inbound: new otel.OpenTelemetryInboundInterceptor(),
        outbound: new otel.OpenTelemetryOutboundInterceptor(),
        internals: new otel.OpenTelemetryInternalsInterceptor(),
        api: require('@opentelemetry/api') as TraceApi,
        ids: require('../domain/trace-ids') as TraceIdsModule,
      };
    })());
  // An outbound call is traced when what made it is: the run, or a traced signal or update.
  const inTrace = (): Traced | undefined => (traced?.api.trace.getActiveSpan() ? traced : undefined);

  const inbound: WorkflowInboundCallsInterceptor = {
    execute(input, next) {
      if (!carriesTrace(input.headers)) return next(input);
      const t = tracing();
      return t.inbound.execute(input, (run) => {
        const ids = t.ids.idsOf(run.args[0]);
        t.api.trace.getActiveSpan()?.setAttributes(t.ids.idAttributes(ids));
        return t.api.context.with(t.ids.withIds(t.api.context.active(), ids), () => next(run));
      });
    },
    handleSignal: (input, next) =>
      carriesTrace(input.headers) ? tracing().inbound.handleSignal(input, next) : next(input),
    handleUpdate: (input, next) =>
      carriesTrace(input.headers) ? tracing().inbound.handleUpdate(input, next) : next(input),
    // Not an update's validator nor a query: they run live and are not replayed, and a span
    // there would draw on the run's random numbers only live, so a replay's uuid4() would differ.
  };

  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input, next) => inTrace()?.outbound.scheduleActivity(input, next) ?? next(input),
    scheduleLocalActivity: (input, next) => inTrace()?.outbound.scheduleLocalActivity(input, next) ?? next(input),
    startChildWorkflowExecution: (input, next) =>
      inTrace()?.outbound.startChildWorkflowExecution(input, next) ?? next(input),
    startNexusOperation: (input, next) => inTrace()?.outbound.startNexusOperation(input, next) ?? next(input),
    continueAsNew: (input, next) => inTrace()?.outbound.continueAsNew(input, next) ?? next(input),
    signalWorkflow: (input, next) => inTrace()?.outbound.signalWorkflow(input, next) ?? next(input),
    getLogAttributes: (input, next) => inTrace()?.outbound.getLogAttributes(input, next) ?? next(input),
  };

  return {
    inbound: [inbound],
    outbound: [outbound],
    internals: [{ dispose: (input, next) => (traced ? void traced.internals.dispose(input, next) : next(input)) }],
  };
};

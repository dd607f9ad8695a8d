/**
 * A server span per HTTP request, the root of its trace (or the child of the caller's, when the
 * request carries a W3C `traceparent`): `POST /v1/tasks/:id/sessions` with the method, the route,
 * the status and the task, session or operation the route names. The handler runs inside it, so
 * the workflow start it makes (the Temporal client's interceptor) and any git command of an input
 * check are its children.
 *
 * Hooked only when the process traces (app.ts `traceRequests`): with tracing off the gateway has
 * no hook of this file at all. The attribute names are OpenTelemetry's HTTP conventions, written
 * out: the conventions' module is the SDK's, loaded only when tracing is on.
 */
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { idAttributes, idsOf, withIds, type TraceIds } from '../../domain/trace-ids';

const tracer = trace.getTracer('task-workspaces');

/** Whose id a route's `:id` is, by the route's first segments (`:operationId` says itself). */
const ROUTE_ID: readonly (readonly [prefix: string, id: keyof TraceIds])[] = [
  ['/v1/tasks/:id', 'taskId'],
  ['/v1/sessions/:id', 'sessionId'],
];

function routeIds(route: string | undefined, params: unknown): TraceIds {
  const given = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>;
  const named = ROUTE_ID.find(([prefix]) => route === prefix || route?.startsWith(`${prefix}/`));
  return idsOf({ operationId: given.operationId, ...(named ? { [named[1]]: given.id } : {}) });
}

const open = new WeakMap<FastifyRequest, { span: Span; context: Context }>();

export function traceRequests(app: Pick<FastifyInstance, 'addHook'>): void {
  app.addHook('onRequest', (request, _reply, done) => {
    // The caller's trace context, not its baggage: the ids a trace carries come from the route.
    const parent = propagation.deleteBaggage(propagation.extract(ROOT_CONTEXT, request.headers));
    const route = request.routeOptions.url;
    const ids = routeIds(route, request.params);
    const span = tracer.startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          ...(route ? { 'http.route': route } : {}),
          ...idAttributes(ids),
        },
      },
      parent,
    );
    const entered = withIds(trace.setSpan(parent, span), ids);
    open.set(request, { span, context: entered });
    context.with(entered, done);
  });
  // Fastify reads a body in the stream's callbacks, which do not keep the context entered above:
  // it is entered again for the handler (and the hooks after this one).
  app.addHook('preHandler', (request, _reply, done) => {
    const entry = open.get(request);
    if (entry) context.with(entry.context, done);
    else done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    end(request, null);
    done();
  });
}

function end(request: FastifyRequest, status: number | null): void {
  const entry = open.get(request);
  if (!entry) return;
  open.delete(request);
  if (status === null) entry.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client went away' });
  else {
    entry.span.setAttribute('http.response.status_code', status);
    // A refusal (4xx) is an answer; only a server error marks the span failed.
    if (status >= 500) entry.span.setStatus({ code: SpanStatusCode.ERROR });
  }
  entry.span.end();
}

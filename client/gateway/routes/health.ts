/** /healthz, /readyz and /metrics: no auth; metrics (ours, then this process's Temporal SDK's) answer loopback callers only by default. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ApiError } from '../api-error';
import type { GatewayContext } from '../context';
import type { GatewayMetrics } from '../metrics';
import { errorResponses } from '../schemas';
import { containerAvailability } from '../../../executors/container/engine';
import { ContainersStatus as ContainersReadiness } from '../preparation-view';

/** Documented only (a string payload is sent as it is): Prometheus text, or 403 to a caller not on loopback. */
const MetricsResponses = {
  200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } },
  403: errorResponses[403],
};

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/** Whether a dependency answered within the probe's bound (the pool's own connect timeout is longer). */
async function answers(probe: Promise<unknown>, withinMs = 3000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), withinMs);
  });
  try {
    return await Promise.race([
      probe.then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** What an operator reads first: which part does not answer. */
function notReadyReason(database: boolean, temporal: boolean): string {
  if (!database && !temporal) return 'database_and_temporal_unreachable';
  return database ? 'temporal_unreachable' : 'database_unreachable';
}

export function healthRoutes(
  ctx: GatewayContext,
  metrics: GatewayMetrics,
  metricsPublic: boolean,
): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/healthz',
      { schema: { tags: ['health'], response: { 200: Type.Object({ status: Type.Literal('ok') }) } } },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      {
        schema: {
          tags: ['health'],
          response: {
            200: Type.Object({
              status: Type.Literal('ready'),
              agentIsolation: Type.Union([Type.Literal('bwrap'), Type.Literal('none')]),
              agentNetwork: Type.Union([Type.Literal('egress'), Type.Literal('none'), Type.Literal('host')]),
              containers: Type.Optional(ContainersReadiness),
            }),
            503: Type.Object({
              status: Type.Literal('not_ready'),
              database: Type.Boolean(),
              temporal: Type.Boolean(),
              reason: Type.String(),
              agentIsolation: Type.Union([Type.Literal('bwrap'), Type.Literal('none')]),
              agentNetwork: Type.Union([Type.Literal('egress'), Type.Literal('none'), Type.Literal('host')]),
              containers: Type.Optional(ContainersReadiness),
            }),
          },
        },
      },
      async (_request, reply) => {
        // With the container executor configured: whether it can run here, and why not (the
        // other executors do not need it, so it does not make the service unready).
        const [database, temporal, containers] = await Promise.all([
          answers(ctx.pool.query('SELECT 1')),
          answers(ctx.temporal.workflowService.getSystemInfo({})),
          ctx.config.containers.engineSocket ? containerAvailability(ctx.config.containers) : undefined,
        ]);
        // What agents run in here (bubblewrap, or nothing but the allow-listed environment): said
        // so that an operator sees the trust boundary (docs/security.md).
        const agentIsolation = ctx.agentIsolation ?? 'none';
        const agentNetwork = ctx.agentNetwork ?? 'host';
        if (database && temporal)
          return { status: 'ready' as const, agentIsolation, agentNetwork, ...(containers ? { containers } : {}) };
        return reply.code(503).send({
          status: 'not_ready' as const,
          database,
          temporal,
          reason: notReadyReason(database, temporal),
          agentIsolation,
          agentNetwork,
          ...(containers ? { containers } : {}),
        });
      },
    );

    app.get('/metrics', { schema: { tags: ['health'], response: MetricsResponses } }, async (request, reply) => {
      if (!metricsPublic && !LOOPBACK.test(request.socket.remoteAddress ?? ''))
        throw new ApiError('forbidden', 'Metrics are served to loopback callers only.');
      return reply.type(metrics.registry.contentType).send(await metrics.exposition());
    });
  };
}

/** /healthz, /readyz and /metrics: no auth; metrics answer loopback callers only by default. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Registry } from 'prom-client';
import { ApiError } from '../api-error';
import type { GatewayContext } from '../context';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

export function healthRoutes(ctx: GatewayContext, registry: Registry, metricsPublic: boolean): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/healthz', { schema: { tags: ['health'], response: { 200: Type.Object({ status: Type.Literal('ok') }) } } }, async () => ({ status: 'ok' as const }));

    app.get(
      '/readyz',
      { schema: { tags: ['health'], response: { 200: Type.Object({ status: Type.Literal('ready') }), 503: Type.Object({ status: Type.String(), database: Type.Boolean(), temporal: Type.Boolean() }) } } },
      async (_request, reply) => {
        const timeout = <T>(p: Promise<T>) => Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 3000))]);
        const [database, temporal] = await Promise.all([
          timeout(ctx.pool.query('SELECT 1')).then(() => true, () => false),
          timeout(ctx.temporal.workflowService.getSystemInfo({})).then(() => true, () => false),
        ]);
        if (database && temporal) return { status: 'ready' as const };
        return reply.code(503).send({ status: 'not_ready', database, temporal });
      },
    );

    app.get('/metrics', { schema: { tags: ['health'], hide: true } }, async (request, reply) => {
      if (!metricsPublic && !LOOPBACK.test(request.socket.remoteAddress ?? '')) throw new ApiError('forbidden', 'Metrics are served to loopback callers only.');
      return reply.type(registry.contentType).send(await registry.metrics());
    });
  };
}

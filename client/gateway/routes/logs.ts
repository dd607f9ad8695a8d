/** GET /v1/sessions/:id/logs: what an agent printed, as text; `follow=1` streams it until the agent ends. Never a path. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findExecution, latestExecution } from '../../../db/executions';
import { findSession } from '../../../db/sessions';
import { followLog, tailLog } from '../../agent-log';
import { ApiError, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { IdParams, Uuid, errorResponses } from '../schemas';

const LogsQuery = Type.Object(
  {
    tail: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
    executionId: Type.Optional(Uuid),
    follow: Type.Optional(Type.Union([Type.Literal('1'), Type.Literal('0'), Type.Literal('true'), Type.Literal('false')])),
  },
  { additionalProperties: false },
);

export function logRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/sessions/:id/logs',
      { config: { role: 'user' }, schema: { tags: ['sessions'], params: IdParams, querystring: LogsQuery, response: { 200: Type.String({ description: 'text/plain; with follow=1, streamed (chunked) until the agent ends' }), ...errorResponses } } },
      async (request, reply) => {
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        const exec = request.query.executionId ? await findExecution(ctx.pool, request.query.executionId) : await latestExecution(ctx.pool, session.id);
        if (!exec || exec.session_id !== session.id) throw notFound('Execution');
        // The log lives on the agent's host: read here only where this is that host (or shares its log folder).
        if (exec.host_id !== ctx.config.hostId) throw new ApiError('host_unavailable');
        const tail = request.query.tail === undefined ? null : Number(request.query.tail);
        reply.type('text/plain; charset=utf-8');
        const text = await tailLog(exec.log_path, tail);
        if (request.query.follow !== '1' && request.query.follow !== 'true') return text;
        const running = async () => (await findExecution(ctx.pool, exec.id))?.status === 'running';
        const stream = await followLog(exec.log_path, running);
        stream.unshift(text);
        // A stream is sent as it comes (chunked), not serialized.
        return reply.send(stream as unknown as string);
      },
    );
  };
}

/** GET /v1/sessions/:id/logs: what an agent printed, as text; `follow=1` streams it until the agent ends. Never a path. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findExecution, latestExecution } from '../../../db/executions';
import { findSession } from '../../../db/sessions';
import { followLog, localLog } from '../../agent-log';
import { logOnHost } from '../../engine-hosts';
import { notFound, refusalError } from '../api-error';
import { EngineRefusal } from '../../typed-outcome';
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
        // The log lives on the agent's host: read here where this is that host, else asked of that host through its queue.
        const source = exec.host_id === ctx.config.hostId ? localLog(exec.log_path) : logOnHost(ctx.temporal, ctx.config, exec.host_id, exec.log_path);
        const tail = request.query.tail === undefined ? null : Number(request.query.tail);
        const head = await source.tail(tail).catch((err: unknown) => {
          throw err instanceof EngineRefusal ? refusalError(err.refusal) : err;
        });
        reply.type('text/plain; charset=utf-8');
        if (request.query.follow !== '1' && request.query.follow !== 'true') return head.text.toString('utf8');
        const running = async () => (await findExecution(ctx.pool, exec.id))?.status === 'running';
        const stream = followLog(source, head.offset, running, exec.host_id === ctx.config.hostId ? 250 : 1000);
        stream.unshift(head.text);
        // A stream is sent as it comes (chunked), not serialized.
        return reply.send(stream as unknown as string);
      },
    );
  };
}

/** GET /v1/sessions/:id/logs: what an agent printed, as text; `follow=1` streams it until the agent ends. Never a path. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findExecution, latestExecution } from '../../../db/executions';
import { findSession } from '../../../db/sessions';
import type { Logger } from 'pino';
import { followLog } from '../../../executors/host/agent-log';
import { executorsOf } from '../../../executors/registry';
import { logOnHost } from '../engine/engine-hosts';
import { notFound, refusalError } from '../api-error';
import { EngineRefusal } from '../engine/typed-outcome';
import { ApplicationFailure } from '@temporalio/common';
import { isErrorCode } from '../../../domain/errors';
import type { GatewayContext } from '../context';
import { IdParams, Uuid, errorResponses } from '../schemas';
import { preparationsOf } from '../../../db/workspace-preparations';

const LogsQuery = Type.Object(
  {
    tail: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
    executionId: Type.Optional(Uuid),
    /** `setup`: the log of the setup its launch ran in the workspace it made (of `repositoryId`, else of the first that ran one). */
    source: Type.Optional(Type.Union([Type.Literal('agent'), Type.Literal('setup')])),
    repositoryId: Type.Optional(Uuid),
    follow: Type.Optional(
      Type.Union([Type.Literal('1'), Type.Literal('0'), Type.Literal('true'), Type.Literal('false')]),
    ),
  },
  { additionalProperties: false },
);

export function logRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Read here where this is the agent's host: by the executor that holds it (only one of its run logs).
    const executors = executorsOf({ pool: ctx.pool, config: ctx.config, logger: app.log as unknown as Logger });
    app.get(
      '/v1/sessions/:id/logs',
      {
        config: { role: 'user' },
        schema: {
          tags: ['sessions'],
          params: IdParams,
          querystring: LogsQuery,
          response: {
            // Documented only: a string or a stream is sent as it is, never serialized.
            200: {
              description: 'What the agent printed; with follow=1, streamed (chunked) until the agent ends',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
            ...errorResponses,
          },
        },
      },
      async (request, reply) => {
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        if (request.query.source === 'setup') {
          // A setup has ended before its launch's agent started: its log is read whole (or its tail), never followed.
          const prepared = (await preparationsOf(ctx.pool, [session.id])).find(
            (p) => p.log_path && (!request.query.repositoryId || p.repository_id === request.query.repositoryId),
          );
          if (!prepared?.log_path) throw notFound('Setup log');
          // A setup on an SSH target: its log is read there, by the host that talks to the target.
          const at = { sshTargetId: prepared.ssh_target_id };
          const source =
            prepared.host_id === ctx.config.hostId
              ? await executors.at(at).openLog(at, prepared.log_path).catch(refused)
              : logOnHost(ctx.temporal, ctx.config, prepared.host_id, prepared.log_path, prepared.ssh_target_id);
          const head = await source
            .tail(request.query.tail === undefined ? null : Number(request.query.tail))
            .catch(refused);
          reply.type('text/plain; charset=utf-8');
          return head.text.toString('utf8');
        }
        const exec = request.query.executionId
          ? await findExecution(ctx.pool, request.query.executionId)
          : await latestExecution(ctx.pool, session.id);
        if (!exec || exec.session_id !== session.id) throw notFound('Execution');
        // The log lives on the agent's host: read here where this is that host, else asked of that host through its queue.
        // An agent on an SSH target: its log is read there, by the host that talks to the target.
        const here = exec.host_id === ctx.config.hostId;
        const place = { sshTargetId: exec.ssh_target_id };
        const source = here
          ? await executors.at(place).openLog(place, exec.log_path).catch(refused)
          : logOnHost(ctx.temporal, ctx.config, exec.host_id, exec.log_path, exec.ssh_target_id);
        const tail = request.query.tail === undefined ? null : Number(request.query.tail);
        const head = await source.tail(tail).catch(refused);
        reply.type('text/plain; charset=utf-8');
        if (request.query.follow !== '1' && request.query.follow !== 'true') return head.text.toString('utf8');
        const running = async () => (await findExecution(ctx.pool, exec.id))?.status === 'running';
        const stream = followLog(source, head.offset, running, here && !exec.ssh_target_id ? 250 : 1000);
        stream.unshift(head.text);
        // A stream is sent as it comes (chunked), not serialized.
        return reply.send(stream as unknown as string);
      },
    );
  };
}

/** A refusal of the host or the target (typed) as the API error it is. */
function refused(err: unknown): never {
  if (err instanceof EngineRefusal) throw refusalError(err.refusal);
  // Read here (an SSH target this host talks to): the step's typed failure, as a workflow's would be.
  if (err instanceof ApplicationFailure && isErrorCode(err.type))
    throw refusalError({ code: err.type, details: (err.details?.[0] ?? {}) as Record<string, unknown> });
  throw err;
}

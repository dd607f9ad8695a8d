/**
 * GET /v1/tasks/:id/diff: the task's changes per repository [R8.1], committed (merge base of the
 * task branch with its base, to its head) then uncommitted (the active worktree against its HEAD
 * and its untracked files, or a released task's saved work), cut at TWS_DIFF_MAX_FILES files and
 * TWS_DIFF_MAX_BYTES of patch. `Accept: text/x-diff` answers the patch alone, as text. Read on
 * the host that holds each repository: here when it is this one, else through that host's queue.
 * Never changes a worktree, an index or a ref; never names a path of the host.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApplicationFailure } from '@temporalio/common';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { diffSourcesOf, type DiffPlace } from '../../../db/task-diff';
import { findTask } from '../../../db/tasks';
import { isErrorCode } from '../../../domain/errors';
import { DIFF_FILE_STATUSES, type DiffRequest, type RepositoryDiff } from '../../../domain/task-diff';
import { readHostTaskDiff } from '../../../executors/host/task-diff';
import { readTaskDiffOn } from '../engine/engine-task-diff';
import { EngineRefusal } from '../engine/typed-outcome';
import { badRequest, notFound, refusalError } from '../api-error';
import type { GatewayContext } from '../context';
import { IdParams, Uuid, errorResponses } from '../schemas';

const DiffQuery = Type.Object(
  {
    repositoryId: Type.Optional(Uuid),
    patch: Type.Optional(
      Type.Union([Type.Literal('1'), Type.Literal('0'), Type.Literal('true'), Type.Literal('false')]),
    ),
    /** One path (a file or a folder) of the repository, relative to its top, taken literally. */
    path: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  },
  { additionalProperties: false },
);

const TaskDiff = Type.Object({
  repositories: Type.Array(
    Type.Object({
      repositoryId: Uuid,
      baseBranch: Type.String(),
      mergeBase: Type.Union([Type.String(), Type.Null()]),
      head: Type.Union([Type.String(), Type.Null()]),
      ahead: Type.Integer(),
      behind: Type.Integer(),
      files: Type.Array(
        Type.Object({
          path: Type.String(),
          previousPath: Type.Optional(Type.String()),
          status: Type.Union(DIFF_FILE_STATUSES.map((s) => Type.Literal(s))),
          additions: Type.Integer(),
          deletions: Type.Integer(),
          binary: Type.Boolean(),
          uncommitted: Type.Boolean(),
        }),
      ),
      patch: Type.Optional(Type.String()),
      truncated: Type.Boolean(),
    }),
  ),
});

/** A path inside the repository: relative, no `..` step, no NUL. */
const isRepositoryPath = (p: string): boolean =>
  !p.startsWith('/') && !p.includes('\0') && !p.split('/').includes('..');

export function taskDiffRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/tasks/:id/diff',
      {
        config: { role: 'user' },
        schema: {
          tags: ['tasks'],
          params: IdParams,
          querystring: DiffQuery,
          response: {
            200: {
              description: 'The diff as JSON; with `Accept: text/x-diff`, the patch alone as text.',
              content: {
                'application/json': { schema: TaskDiff },
                'text/x-diff': { schema: { type: 'string' } },
              },
            },
            ...errorResponses,
          },
        },
      },
      async (request, reply) => {
        const { id } = request.params;
        const { repositoryId, path } = request.query;
        if (!(await findTask(ctx.pool, id))) throw notFound('Task');
        if (path !== undefined && !isRepositoryPath(path))
          throw badRequest('path must be a path inside the repository.');
        const places = (await diffSourcesOf(ctx.pool, id)).filter(
          (p) => repositoryId === undefined || p.repositoryId === repositoryId,
        );
        if (repositoryId !== undefined && places.length === 0) throw notFound('Repository');
        const asText = /\btext\/x-diff\b/.test(request.headers.accept ?? '');
        const patch = asText || request.query.patch === '1' || request.query.patch === 'true';
        const repositories = await readDiffs(ctx, app.log as unknown as Logger, places, { patch, path });
        if (asText) {
          reply.type('text/x-diff; charset=utf-8');
          return repositories.map((r) => r.patch ?? '').join('');
        }
        return { repositories };
      },
    );
  };
}

/** Each host's repositories read there, in the task's order, within one allowance. */
async function readDiffs(
  ctx: GatewayContext,
  logger: Logger,
  places: DiffPlace[],
  ask: { patch: boolean; path?: string },
): Promise<RepositoryDiff[]> {
  const budget = { bytes: ctx.config.diffMaxBytes, files: ctx.config.diffMaxFiles };
  const answers = new Map<string, RepositoryDiff>();
  for (const hostId of [...new Set(places.map((p) => p.hostId))]) {
    const request: DiffRequest = {
      sources: places.filter((p) => p.hostId === hostId).map(({ hostId: _host, ...source }) => source),
      patch: ask.patch,
      ...(ask.path !== undefined ? { path: ask.path } : {}),
      maxBytes: Math.max(0, budget.bytes),
      maxFiles: Math.max(0, budget.files),
    };
    const read =
      hostId === ctx.config.hostId
        ? readHostTaskDiff({ config: ctx.config, logger }, request)
        : readTaskDiffOn(ctx.temporal, ctx.config, hostId, request);
    for (const answer of await read.catch(refused)) {
      answers.set(answer.repositoryId, answer);
      budget.files -= answer.files.length;
      budget.bytes -= Buffer.byteLength(answer.patch ?? '');
    }
  }
  return places.map((p) => answers.get(p.repositoryId)!).filter(Boolean);
}

/** A refusal of the host (typed), read here or there, as the API error it is. */
function refused(err: unknown): never {
  if (err instanceof EngineRefusal) throw refusalError(err.refusal);
  if (err instanceof ApplicationFailure && isErrorCode(err.type))
    throw refusalError({ code: err.type, details: (err.details?.[0] ?? {}) as Record<string, unknown> });
  throw err;
}

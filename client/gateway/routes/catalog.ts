/** POST /v1/repositories and /v1/boards; the work deletes saved, per repository. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findRepositories, insertBoard, insertRepository } from '../../../db/catalog';
import { listSavedWork } from '../../../db/saved-work';
import { isUniqueViolation } from '../../../db/pool';
import { liveHostIds } from '../../../db/hosts';
import { repositoryNameProblem } from '../../../domain/refs';
import { checkRepository } from '../../../git/repository-check';
import { checkRepositoryOn } from '../../engine-client';
import { ApiError, badRequest, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { Board, CreateBoardBody, CreateRepositoryBody, IdParams, Repository, Uuid, errorResponses } from '../schemas';

/**
 * A repository without `hostId` goes to the only live host; with none live, to this gateway's own
 * host when it runs that host's launches (one machine, the worker not up yet); otherwise the caller says.
 */
async function defaultHost(ctx: GatewayContext): Promise<string> {
  const live = await liveHostIds(ctx.pool);
  if (live.length === 1) return live[0]!;
  if (live.length === 0 && ctx.config.gatewayRunsLaunches) return ctx.config.hostId;
  throw badRequest('hostId is required');
}

const SavedWorkItem = Type.Object({ taskId: Uuid, repositoryId: Uuid, ref: Type.String(), commit: Type.String(), savedAt: Type.String() });
const SavedWorkPage = Type.Object({ items: Type.Array(SavedWorkItem), nextCursor: Type.Union([Type.String(), Type.Null()]) });
const PageQuery = Type.Object(
  { limit: Type.Optional(Type.String({ pattern: '^(200|1[0-9]{2}|[1-9][0-9]?)$' })), cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 400, pattern: '^[A-Za-z0-9_-]+$' })) },
  { additionalProperties: false },
);

/** An opaque cursor: the last row of the page (its time and ref); anything else is a 400. */
function readCursor(cursor: string | undefined): { savedAt: string; ref: string } | null {
  if (cursor === undefined) return null;
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { t?: unknown; r?: unknown };
    if (typeof value.t === 'string' && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d(:\d\d)?$/.test(value.t) && typeof value.r === 'string' && value.r.length <= 300) return { savedAt: value.t, ref: value.r };
  } catch {
    // fall through
  }
  throw badRequest('The cursor is not one this list gave.');
}
const writeCursor = (last: { savedAt: string; ref: string }) => Buffer.from(JSON.stringify({ t: last.savedAt, r: last.ref })).toString('base64url');

export function catalogRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/repositories',
      { config: { role: 'user' }, schema: { tags: ['catalog'], body: CreateRepositoryBody, response: { 201: Repository, ...errorResponses } } },
      async (request, reply) => {
        const { name, path: given, defaultBranch } = request.body;
        const nameProblem = repositoryNameProblem(name);
        if (nameProblem) throw badRequest(`Repository name ${nameProblem}.`);
        const hostId = request.body.hostId ?? (await defaultHost(ctx));
        // Checked on the host that holds the path, through its queue; the gateway that runs this
        // host's launches is that host's own process (same host id, same machine): it checks here.
        const checked = hostId === ctx.config.hostId && ctx.config.gatewayRunsLaunches
          ? await checkRepository({ path: given, defaultBranch }, ctx.config)
          : await checkRepositoryOn(ctx.temporal, ctx.config, hostId, { path: given, defaultBranch });
        if (!checked.ok) throw 'code' in checked ? new ApiError(checked.code) : badRequest(checked.problem);
        const { path: real, defaultBranch: branch } = checked;
        const id = randomUUID();
        try {
          await insertRepository(ctx.pool, { id, name, path: real, default_branch: branch, host_id: hostId });
        } catch (err) {
          if (isUniqueViolation(err)) throw badRequest('A repository with this name or path is already registered.');
          throw err;
        }
        return reply.code(201).send({ id, name, defaultBranch: branch });
      },
    );

    app.get(
      '/v1/repositories/:id/saved-work',
      { config: { role: 'user' }, schema: { tags: ['catalog'], params: IdParams, querystring: PageQuery, response: { 200: SavedWorkPage, ...errorResponses } } },
      async (request) => {
        const after = readCursor(request.query.cursor);
        if ((await findRepositories(ctx.pool, [request.params.id])).length === 0) throw notFound('Repository');
        const limit = request.query.limit === undefined ? 50 : Number(request.query.limit);
        const rows = await listSavedWork(ctx.pool, request.params.id, limit + 1, after);
        const page = rows.slice(0, limit);
        const last = page[page.length - 1];
        return { items: page.map(({ exactAt: _, ...item }) => item), nextCursor: rows.length > limit && last ? writeCursor({ savedAt: last.exactAt, ref: last.ref }) : null };
      },
    );

    app.post(
      '/v1/boards',
      { config: { role: 'user' }, schema: { tags: ['catalog'], body: CreateBoardBody, response: { 201: Board, ...errorResponses } } },
      async (request, reply) => {
        const id = randomUUID();
        await insertBoard(ctx.pool, id, request.body.name);
        return reply.code(201).send({ id, name: request.body.name });
      },
    );
  };
}

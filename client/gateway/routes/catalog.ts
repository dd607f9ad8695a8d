/** POST /v1/repositories and /v1/boards; the work deletes saved, per repository. */
import { randomUUID } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findRepositories, insertBoard, insertRepository } from '../../../db/catalog';
import { listSavedWork } from '../../../db/saved-work';
import { isUniqueViolation } from '../../../db/pool';
import { branchNameProblem, repositoryNameProblem } from '../../../domain/refs';
import { branchCommit, currentBranch, gitAt, showToplevel } from '../../../git/git';
import { badRequest, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { Board, CreateBoardBody, CreateRepositoryBody, IdParams, Repository, Uuid, errorResponses } from '../schemas';

function isUnder(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
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
  const gitOptions = { binary: ctx.config.gitBinary };
  return async (app) => {
    app.post(
      '/v1/repositories',
      { config: { role: 'user' }, schema: { tags: ['catalog'], body: CreateRepositoryBody, response: { 201: Repository, ...errorResponses } } },
      async (request, reply) => {
        const { name, path: given, defaultBranch } = request.body;
        const nameProblem = repositoryNameProblem(name);
        if (nameProblem) throw badRequest(`Repository name ${nameProblem}.`);
        if (!path.isAbsolute(given)) throw badRequest('The repository path must be absolute.');
        const real = await realpath(given).catch(() => null);
        if (!real || !(await stat(real)).isDirectory()) throw badRequest('The repository path does not exist or is not a directory.');
        const roots = await Promise.all(ctx.config.repositoryRoots.map((root) => realpath(root).catch(() => root)));
        if (roots.length > 0 && !roots.some((root) => isUnder(real, root))) throw badRequest('The repository path is outside the allowed repository roots.');
        const toplevel = await showToplevel(real, gitOptions);
        if (!toplevel) throw badRequest('The path is not a git repository with a working tree.');
        if (toplevel !== real) throw badRequest('The path must be the top level of its git repository.');
        const branch = defaultBranch ?? (await currentBranch(real, gitOptions));
        if (!branch) throw badRequest('The repository has no current branch; give defaultBranch.');
        const problem = branchNameProblem(branch);
        if (problem) throw badRequest(`The default branch name ${problem}.`);
        if (!(await branchCommit(gitAt(real, gitOptions), branch))) throw badRequest('The default branch does not exist in the repository.');
        const id = randomUUID();
        try {
          await insertRepository(ctx.pool, { id, name, path: real, default_branch: branch });
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

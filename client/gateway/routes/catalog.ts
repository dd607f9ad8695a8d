/** Repositories and boards (register, list); the work deletes saved, per repository. */
import { randomUUID } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findRepositories, insertBoard, insertRepository, listBoards, listRepositories } from '../../../db/catalog';
import { listSavedWork } from '../../../db/saved-work';
import { isUniqueViolation } from '../../../db/pool';
import { branchNameProblem, repositoryNameProblem } from '../../../domain/refs';
import { branchCommit, currentBranch, gitAt, showToplevel } from '../../../git/git';
import { badRequest, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { lookahead, pageAnswer, pageOf, pageRequest, PageQueryFields, readPage } from '../pagination';
import { Board, CreateBoardBody, CreateRepositoryBody, IdParams, Repository, Uuid, errorResponses } from '../schemas';

function isUnder(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

const SavedWorkItem = Type.Object({ taskId: Uuid, repositoryId: Uuid, ref: Type.String(), commit: Type.String(), savedAt: Type.String() });
const PageQuery = Type.Object(PageQueryFields, { additionalProperties: false });

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
      { config: { role: 'user' }, schema: { tags: ['catalog'], params: IdParams, querystring: PageQuery, response: { 200: pageOf(SavedWorkItem), ...errorResponses } } },
      async (request) => {
        const page = pageRequest(request.query, (ref) => ref.startsWith('refs/'));
        if ((await findRepositories(ctx.pool, [request.params.id])).length === 0) throw notFound('Repository');
        const rows = await listSavedWork(ctx.pool, request.params.id, lookahead(page));
        return pageAnswer(rows, page.limit, (row) => row.ref, ({ exact_at: _, ...item }) => item);
      },
    );

    // As POST answers: no path (where a repository lives is never shown).
    app.get(
      '/v1/repositories',
      { config: { role: 'user' }, schema: { tags: ['catalog'], querystring: PageQuery, response: { 200: pageOf(Repository), ...errorResponses } } },
      async (request) => readPage(request.query, (page) => listRepositories(ctx.pool, page), (row) => row.id, (row) => ({ id: row.id, name: row.name, defaultBranch: row.default_branch })),
    );

    app.get(
      '/v1/boards',
      { config: { role: 'user' }, schema: { tags: ['catalog'], querystring: PageQuery, response: { 200: pageOf(Board), ...errorResponses } } },
      async (request) => readPage(request.query, (page) => listBoards(ctx.pool, page), (row) => row.id, (row) => ({ id: row.id, name: row.name })),
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

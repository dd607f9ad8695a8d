/** POST /v1/repositories and /v1/boards. */
import { randomUUID } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { insertBoard, insertRepository } from '../../../db/catalog';
import { isUniqueViolation } from '../../../db/pool';
import { branchNameProblem, repositoryNameProblem } from '../../../domain/refs';
import { branchCommit, currentBranch, gitAt, showToplevel } from '../../../git/git';
import { badRequest } from '../api-error';
import type { GatewayContext } from '../context';
import { Board, CreateBoardBody, CreateRepositoryBody, Repository, errorResponses } from '../schemas';

function isUnder(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

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

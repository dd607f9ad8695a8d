/** Repositories and boards (register, list); the work deletes saved, per repository. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  findRepositories,
  insertBoard,
  insertRepository,
  listBoards,
  listRepositories,
  repositoryView,
  updateRepository,
  type RepositoryViewRow,
} from '../../../db/catalog';
import { listSavedWork } from '../../../db/saved-work';
import { isUniqueViolation } from '../../../db/pool';
import { liveHostIds } from '../../../db/hosts';
import { repositoryNameProblem } from '../../../domain/refs';
import { ApiError, badRequest, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import type { Role } from '../auth';
import { checkRepositoryOnItsHost } from '../placement';
import { checkedRemote, checkedStrategies } from '../repository-remote';
import { lookahead, pageAnswer, pageOf, pageRequest, PageQueryFields, readPage } from '../pagination';
import { Board, CreateBoardBody, CreateRepositoryBody, PatchRepositoryBody, Repository } from '../catalog-schemas';
import { IdParams, Uuid, errorResponses } from '../schemas';
import { DEFAULT_REBUILDABLE, rebuildablePatternProblem } from '../../../domain/rebuildable';
import { copyPatternProblem, setupProblem } from '../../../domain/workspace-setup';

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

const SavedWorkItem = Type.Object({
  taskId: Uuid,
  repositoryId: Uuid,
  ref: Type.String(),
  commit: Type.String(),
  savedAt: Type.String(),
  /** The cleanup that saved it: a consented delete, a quick-chat expiry, an idle release… */
  trigger: Type.Union([Type.String(), Type.Null()]),
  /** When a launch put it back into a new worktree. */
  restoredAt: Type.Union([Type.String(), Type.Null()]),
  /**
   * `conflict`: it did not apply to the branch as it is now; `abandoned`: its workspace was
   * abandoned before a launch took it back (an abandon starts afresh). Either way apply the ref by hand.
   */
  restore: Type.Union([Type.Literal('applied'), Type.Literal('conflict'), Type.Literal('abandoned'), Type.Null()]),
  /** Ignored paths the save left out, and why (`rebuildable`: the repository's patterns say they are rebuilt). */
  leftOut: Type.Array(Type.Object({ path: Type.String(), reason: Type.String() })),
});

/** The patterns as given, each checked (domain/rebuildable.ts); a bad one is a 400 that names it. */
function checkedRebuildable(patterns: string[]): string[] {
  for (const [i, pattern] of patterns.entries()) {
    const problem = rebuildablePatternProblem(pattern);
    if (problem) throw badRequest(`rebuildable/${i} ${problem}.`);
  }
  return [...new Set(patterns)];
}

/** The patterns of files copied into each new worktree, each checked (domain/workspace-setup.ts); a bad one is a 400 that names it. */
function checkedCopyFiles(patterns: string[]): string[] {
  for (const [i, pattern] of patterns.entries()) {
    const problem = copyPatternProblem(pattern);
    if (problem) throw badRequest(`copyFiles/${i} ${problem}.`);
  }
  return [...new Set(patterns)];
}

/** The setup's argv, checked (domain/workspace-setup.ts); a bad one is a 400 that names it. */
function checkedSetup(argv: string[]): string[] {
  const problem = setupProblem(argv);
  if (problem) throw badRequest(`setup ${problem}.`);
  return argv;
}

/** A repository as the API shows it: never its path. */
const repositoryOut = (row: RepositoryViewRow) => ({
  id: row.id,
  name: row.name,
  defaultBranch: row.default_branch,
  rebuildable: row.rebuildable ?? [...DEFAULT_REBUILDABLE],
  rebuildableDefault: row.rebuildable === null,
  setup: row.setup,
  copyFiles: row.copy_files ?? [],
  setupFailure: row.setup_failure,
  remote: row.remote,
  mergeStrategies: row.merge_strategies,
});
const PageQuery = Type.Object(PageQueryFields, { additionalProperties: false });

/** The fields of a repository only an operator token may name. */
const OPERATOR_FIELDS = ['setup', 'copyFiles', 'setupFailure', 'rebuildable', 'remote', 'mergeStrategies'] as const;

/**
 * What a new workspace runs and gets copied into it, and what a release may drop, are the
 * operator's to say: a setup runs a command in every new workspace of the repository, copied files
 * (a `.env`) hand what is in the source checkout to its agents, and `rebuildable` names ignored
 * files an idle release deletes without saving; where its branches are pushed and how it may be
 * merged are the operator's too. A user token naming any of these is refused (403),
 * nothing changed.
 */
function operatorForPreparation(body: Partial<Record<(typeof OPERATOR_FIELDS)[number], unknown>>, role: Role | null) {
  if (role !== 'operator' && OPERATOR_FIELDS.some((field) => body[field] !== undefined))
    throw new ApiError(
      'forbidden',
      'setup, copyFiles, setupFailure, rebuildable, remote and mergeStrategies are set by an operator token.',
    );
}

export function catalogRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/repositories',
      {
        config: { role: 'user' },
        schema: { tags: ['catalog'], body: CreateRepositoryBody, response: { 201: Repository, ...errorResponses } },
      },
      async (request, reply) => {
        const { name, path: given, defaultBranch } = request.body;
        operatorForPreparation(request.body, request.callerRole);
        const nameProblem = repositoryNameProblem(name);
        if (nameProblem) throw badRequest(`Repository name ${nameProblem}.`);
        const rebuildable = request.body.rebuildable ? checkedRebuildable(request.body.rebuildable) : null;
        const setup = request.body.setup ? checkedSetup(request.body.setup) : null;
        const copyFiles = request.body.copyFiles?.length ? checkedCopyFiles(request.body.copyFiles) : null;
        const setupFailure = request.body.setupFailure ?? 'warn';
        const remote = request.body.remote === undefined ? null : checkedRemote(request.body.remote);
        const mergeStrategies = request.body.mergeStrategies ? checkedStrategies(request.body.mergeStrategies) : null;
        const hostId = request.body.hostId ?? (await defaultHost(ctx));
        const checked = await checkRepositoryOnItsHost(ctx, hostId, { path: given, defaultBranch, identity: true });
        if (!checked.ok) throw badRequest(checked.problem);
        const { path: real, defaultBranch: branch, rootCommit } = checked;
        const id = randomUUID();
        try {
          await insertRepository(ctx.pool, {
            id,
            name,
            path: real,
            default_branch: branch,
            host_id: hostId,
            root_commit: rootCommit,
            rebuildable,
            setup,
            copy_files: copyFiles,
            setup_failure: setupFailure,
            remote,
            merge_strategies: mergeStrategies,
          });
        } catch (err) {
          if (isUniqueViolation(err)) {
            // The index that refused it says which: the name is unique everywhere, the path per host.
            const clash = (err as { constraint?: string }).constraint === 'repositories_host_path' ? 'path' : 'name';
            throw new ApiError(
              'repository_taken',
              clash === 'path'
                ? 'A repository at this path on this host is already registered (under another name).'
                : 'A repository with this name is already registered; choose another name.',
              { clash },
            );
          }
          throw err;
        }
        return reply.code(201).send(
          repositoryOut({
            id,
            name,
            default_branch: branch,
            rebuildable,
            setup,
            copy_files: copyFiles,
            setup_failure: setupFailure,
            remote,
            merge_strategies: mergeStrategies,
          }),
        );
      },
    );

    app.patch(
      '/v1/repositories/:id',
      {
        config: { role: 'user' },
        schema: {
          tags: ['catalog'],
          params: IdParams,
          body: PatchRepositoryBody,
          response: { 200: Repository, ...errorResponses },
        },
      },
      async (request) => {
        // A field left out stays as it is; null is the default list (rebuildable) or none (setup, copyFiles).
        // Every field is checked before anything changes, so a bad one changes nothing.
        const { rebuildable, setup, copyFiles, setupFailure, remote, mergeStrategies } = request.body;
        operatorForPreparation(request.body, request.callerRole);
        const change = {
          rebuildable:
            rebuildable === undefined || rebuildable === null ? rebuildable : checkedRebuildable(rebuildable),
          setup: setup === undefined || setup === null ? setup : checkedSetup(setup),
          copyFiles: copyFiles === undefined || copyFiles === null ? copyFiles : checkedCopyFiles(copyFiles),
          setupFailure,
          remote: remote === undefined || remote === null ? remote : checkedRemote(remote),
          mergeStrategies:
            mergeStrategies === undefined || mergeStrategies === null
              ? mergeStrategies
              : checkedStrategies(mergeStrategies),
        };
        if (!(await updateRepository(ctx.pool, request.params.id, change))) throw notFound('Repository');
        const row = await repositoryView(ctx.pool, request.params.id);
        if (!row) throw notFound('Repository');
        return repositoryOut(row);
      },
    );

    app.get(
      '/v1/repositories/:id/saved-work',
      {
        config: { role: 'user' },
        schema: {
          tags: ['catalog'],
          params: IdParams,
          querystring: PageQuery,
          response: { 200: pageOf(SavedWorkItem), ...errorResponses },
        },
      },
      async (request) => {
        const page = pageRequest(request.query, (ref) => ref.startsWith('refs/'));
        if ((await findRepositories(ctx.pool, [request.params.id])).length === 0) throw notFound('Repository');
        const rows = await listSavedWork(ctx.pool, request.params.id, lookahead(page));
        return pageAnswer(
          rows,
          page.limit,
          (row) => row.ref,
          ({ exact_at: _, ...item }) => item,
        );
      },
    );

    // As POST answers: no path (where a repository lives is never shown).
    app.get(
      '/v1/repositories',
      {
        config: { role: 'user' },
        schema: { tags: ['catalog'], querystring: PageQuery, response: { 200: pageOf(Repository), ...errorResponses } },
      },
      async (request) =>
        readPage(
          request.query,
          (page) => listRepositories(ctx.pool, page),
          (row) => row.id,
          (row) => repositoryOut(row),
        ),
    );

    app.get(
      '/v1/boards',
      {
        config: { role: 'user' },
        schema: { tags: ['catalog'], querystring: PageQuery, response: { 200: pageOf(Board), ...errorResponses } },
      },
      async (request) =>
        readPage(
          request.query,
          (page) => listBoards(ctx.pool, page),
          (row) => row.id,
          (row) => ({ id: row.id, name: row.name }),
        ),
    );

    app.post(
      '/v1/boards',
      {
        config: { role: 'user' },
        schema: { tags: ['catalog'], body: CreateBoardBody, response: { 201: Board, ...errorResponses } },
      },
      async (request, reply) => {
        const id = randomUUID();
        await insertBoard(ctx.pool, id, request.body.name);
        return reply.code(201).send({ id, name: request.body.name });
      },
    );
  };
}

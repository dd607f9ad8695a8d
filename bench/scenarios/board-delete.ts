/**
 * Board delete: a board of many tasks (each with a workspace and a running agent) is
 * deleted by an operator with consent to discard, and timed until every task's cleanup job
 * succeeded and `git worktree list --porcelain` no longer lists any of their worktrees. The bare
 * floor removes as many worktrees of the same repositories with plain `git worktree remove`
 * (per repository in order, repositories side by side). The engine floor replays the board
 * delete's own history shape with no work (its update-with-start, its steps, its children), once.
 */
import path from 'node:path';
import { worktreePath } from '../../domain/task-layout';
import { Api, errorCode } from '../api';
import type { BenchContext } from '../context';
import { CpuAccount } from '../cpu';
import { childStepsOf, shapeOfWorkflow } from '../engine-floor';
import type { WorkflowShape } from '../workflow-shape';
import { profileWorkflow, serviceRoles, type HistoryProfile } from '../history';
import { mapLimit } from '../processes';
import { elapsedMs, ratio, round } from '../stats';
import { createTasks, gitAsync, makeRepo, type Repo } from '../world';
import { leftBehind, waitForJobs } from './cleanup';

export interface BoardDeleteResult {
  tasks: number;
  repositories: number;
  product: {
    seconds: number;
    worktreesPerSecond: number;
    failures: number;
    failureCodes: Record<string, number>;
    leftBehind: number;
    acceptedMs: number;
  };
  floor: { seconds: number; worktreesPerSecond: number; leftBehind: number };
  /** Target ≥ 0.5. */
  throughputRatio: number;
  engine: { seconds: number; shape: WorkflowShape } | null;
  cpuPerWorktreeMs: { product: Record<string, number>; floor: Record<string, number> };
  profile: HistoryProfile | null;
}

export async function runBoardDelete(ctx: BenchContext): Promise<BoardDeleteResult> {
  const { api, config } = ctx;
  const operator = new Api(ctx.services.apiBase, ctx.services.tokens.operator);
  const n = config.boardDelete.tasks;
  const repos: Repo[] = [];
  for (let r = 0; r < 4; r++) repos.push(await makeRepo(api, ctx.reposDir, `board-${r + 1}`, config.repoFiles));
  const boardId = await api.createBoard('bench board');
  const perRepo = await Promise.all(
    repos.map((repo) => createTasks(api, Math.ceil(n / repos.length), [repo], `board ${repo.name}`, boardId)),
  );
  const product = Array.from({ length: n }, (_, i) => {
    const repo = repos[i % repos.length]!;
    const taskId = perRepo[i % repos.length]![Math.floor(i / repos.length)]!;
    return { taskId, repoPath: repo.path, worktreePath: worktreePath(ctx.services.workspaceRoot, taskId, repo.name) };
  });
  // Tasks created beyond n (the ceiling per repository) stay on the board without a workspace.
  ctx.log(`board delete: materializing ${n} product workspaces and ${n} floor worktrees`);
  await mapLimit(product, config.cleanup.materializeConcurrency, (p) => api.launchOk(p.taskId, 'materialized'));
  const floorWorktrees = Array.from({ length: n }, (_, i) => {
    const repo = repos[i % repos.length]!;
    return {
      repoPath: repo.path,
      worktreePath: path.join(ctx.floorRoot, 'board', `wt-${i}`, repo.name),
      branch: `bench-board-floor/${i}`,
    };
  });
  await Promise.all(
    repos.map(async (repo) => {
      for (const w of floorWorktrees.filter((x) => x.repoPath === repo.path))
        await gitAsync(w.repoPath, 'worktree', 'add', '-q', '--no-track', '-b', w.branch, w.worktreePath, 'main');
    }),
  );

  const productCpu = new CpuAccount(ctx.cpu);
  const floorCpu = new CpuAccount(ctx.cpu);
  const failureCodes: Record<string, number> = {};
  let workflowId: string | null = null;
  let acceptedMs = 0;
  const productMs = await productCpu.around(async () => {
    const start = performance.now();
    const res = await operator.call<{ workflowId: string; operations: { taskId: string; operationId: string }[] }>(
      'DELETE',
      `/v1/boards/${boardId}?discardChanges=true`,
    );
    acceptedMs = res.ms;
    if (res.status !== 202)
      throw new Error(`board delete: ${res.status} ${errorCode(res)} ${JSON.stringify(res.body).slice(0, 300)}`);
    workflowId = res.body.workflowId;
    const states = await waitForJobs(
      ctx,
      res.body.operations.map((o) => o.operationId),
      900_000,
    );
    for (const state of states.values())
      if (state !== 'succeeded') failureCodes[state] = (failureCodes[state] ?? 0) + 1;
    return elapsedMs(start);
  });
  const productLeft = leftBehind(product);
  const floorMs = await floorCpu.around(async () => {
    const start = performance.now();
    await ctx.floor.removeWorktrees(floorWorktrees);
    return elapsedMs(start);
  });
  const floorLeft = leftBehind(floorWorktrees);

  let engine: BoardDeleteResult['engine'] = null;
  if (workflowId) {
    const shape = await shapeOfWorkflow(ctx.temporal, workflowId, (child) => childStepsOf(ctx.temporal, child));
    engine = { seconds: round((await ctx.engine.time(shape)) / 1000, 3), shape };
  }
  return {
    tasks: n,
    repositories: repos.length,
    product: {
      seconds: round(productMs / 1000, 3),
      worktreesPerSecond: round(n / (productMs / 1000)),
      failures: Object.values(failureCodes).reduce((s, x) => s + x, 0),
      failureCodes,
      leftBehind: productLeft,
      acceptedMs: round(acceptedMs),
    },
    floor: {
      seconds: round(floorMs / 1000, 3),
      worktreesPerSecond: round(n / (floorMs / 1000)),
      leftBehind: floorLeft,
    },
    throughputRatio: ratio(floorMs, productMs),
    engine,
    cpuPerWorktreeMs: { product: productCpu.per(n), floor: floorCpu.per(n) },
    profile: workflowId ? await profileWorkflow(ctx.temporal, workflowId, null, serviceRoles(ctx.services)) : null,
  };
}

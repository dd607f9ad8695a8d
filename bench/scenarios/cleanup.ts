/**
 * Scenario 4: archive many tasks and wait until every worktree is verified gone (the cleanup
 * jobs succeeded and `git worktree list --porcelain` no longer lists them), against a floor
 * that removes as many worktrees of the same repositories with plain `git worktree remove`.
 * Halves in A-B-B-A order so drift hits both. The archive route may not exist yet: it is
 * probed once on a task of its own, and a 404 makes the scenario not_available.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { worktreePath } from '../../domain/task-layout';
import { errorCode, type ApiResponse } from '../api';
import type { BenchContext } from '../context';
import { CpuAccount } from '../cpu';
import { TransactionAccount } from '../db-activity';
import { shapeOfWorkflow } from '../engine-floor';
import type { WorkflowShape } from '../workflow-shape';
import { profileWorkflow, serviceRoles, type HistoryProfile } from '../history';
import { mapLimit, sleep } from '../processes';
import { elapsedMs, ratio, round } from '../stats';
import { createTasks, gitAsync, makeRepo, registeredWorktrees, type Repo } from '../world';

export type CleanupResult =
  | { status: 'not_available'; probe: { httpStatus: number; code: string } }
  | {
      status: 'measured';
      tasks: number;
      repositories: number;
      product: {
        seconds: number;
        worktreesPerSecond: number;
        failures: number;
        failureCodes: Record<string, number>;
        leftBehind: number;
      };
      floor: { seconds: number; worktreesPerSecond: number; leftBehind: number };
      throughputRatio: number;
      /** The engine floor: the same number of no-work workflows of a cleanup's shape, as many at once as the product's halves. */
      engine: { seconds: number; shape: WorkflowShape | null };
      /** product throughput / throughput of (bare floor + engine floor per task): target ≥ 0.8. */
      throughputRatioToFloors: number;
      /** Milliseconds of CPU per removed worktree, by process group. */
      cpuPerWorktreeMs: { product: Record<string, number>; floor: Record<string, number> };
      /** Database transactions per removed worktree (pg_stat_database, approximate), polling included. */
      productTransactionsPerWorktree: number;
      /** One cleanup workflow of the second product half, for the profile. */
      profile: HistoryProfile | null;
    };

interface Job {
  operationId?: string;
  state?: string;
}

const ACTIVE_STATES = ['prepared', 'pending', 'running', 'retry_wait'];

/**
 * Waits until every job is terminal. Each sweep lists the jobs in an active state (a few light
 * requests whatever the number of jobs); a job in none of those lists is read once by id to
 * learn its final state. Polling itself costs the gateway little, so it barely disturbs the run.
 */
export async function waitForJobs(
  ctx: BenchContext,
  operationIds: string[],
  timeoutMs = 240_000,
): Promise<Map<string, string>> {
  const final = new Map<string, string>();
  const deadline = Date.now() + timeoutMs;
  while (final.size < operationIds.length && Date.now() < deadline) {
    const active = new Set<string>();
    for (const state of ACTIVE_STATES) {
      for (const j of await ctx.api.listAll<Job>(`/v1/cleanup-jobs?state=${state}`))
        if (j.operationId) active.add(j.operationId);
    }
    const maybeDone = operationIds.filter((id) => !final.has(id) && !active.has(id));
    await mapLimit(maybeDone, 4, async (id) => {
      const res = await ctx.api.call<Job>('GET', `/v1/cleanup-jobs/${id}`);
      if (res.status === 200 && res.body.state && !ACTIVE_STATES.includes(res.body.state))
        final.set(id, res.body.state);
    });
    if (final.size < operationIds.length) await sleep(250);
  }
  for (const id of operationIds) if (!final.has(id)) final.set(id, 'timed_out');
  return final;
}

export function leftBehind(worktrees: { repoPath: string; worktreePath: string }[]): number {
  const registered = new Map<string, Set<string>>();
  for (const w of worktrees)
    if (!registered.has(w.repoPath)) registered.set(w.repoPath, registeredWorktrees(w.repoPath));
  return worktrees.filter((w) => registered.get(w.repoPath)!.has(w.worktreePath) || existsSync(w.worktreePath)).length;
}

export async function runCleanup(ctx: BenchContext): Promise<CleanupResult> {
  const { api, config } = ctx;
  // The probe archives a task with a workspace and a running agent, like every task measured below.
  const probeRepo = await makeRepo(api, ctx.reposDir, 'cleanup-probe', 10);
  const probeTask = (await createTasks(api, 1, [probeRepo], 'archive probe'))[0]!;
  await api.launchOk(probeTask, 'materialized');
  const probe = await api.call<{ operationId?: string }>('POST', `/v1/tasks/${probeTask}/archive`, {});
  if (probe.status === 404)
    return { status: 'not_available', probe: { httpStatus: probe.status, code: errorCode(probe) } };
  if (probe.status !== 202 || !probe.body.operationId)
    throw new Error(`archive probe: ${probe.status} ${JSON.stringify(probe.body)}`);
  await waitForJobs(ctx, [probe.body.operationId], 60_000);
  const probeWorkflow = (probe.body as { workflowId?: string }).workflowId;
  const shape = probeWorkflow ? await shapeOfWorkflow(ctx.temporal, probeWorkflow) : null;

  const repos: Repo[] = [];
  for (let r = 0; r < config.cleanup.repositories; r++)
    repos.push(await makeRepo(api, ctx.reposDir, `cleanup-${r + 1}`, config.repoFiles));
  const n = config.cleanup.tasks;
  const productTasks = await Promise.all(
    repos.map((repo) => createTasks(api, Math.ceil(n / repos.length), [repo], `cleanup ${repo.name}`)),
  );
  const product = Array.from({ length: n }, (_, i) => {
    const repo = repos[i % repos.length]!;
    const taskId = productTasks[i % repos.length]![Math.floor(i / repos.length)]!;
    return { taskId, repoPath: repo.path, worktreePath: worktreePath(ctx.services.workspaceRoot, taskId, repo.name) };
  });
  ctx.log(`cleanup: materializing ${n} product workspaces and ${n} floor worktrees`);
  await mapLimit(product, config.cleanup.materializeConcurrency, (p) => api.launchOk(p.taskId, 'materialized'));
  const floorWorktrees = Array.from({ length: n }, (_, i) => {
    const repo = repos[i % repos.length]!;
    return {
      repoPath: repo.path,
      worktreePath: path.join(ctx.floorRoot, 'cleanup', `wt-${i}`, repo.name),
      branch: `bench-floor/${i}`,
    };
  });
  // Per repository in order (git's admin files), repositories side by side.
  await Promise.all(
    repos.map(async (repo) => {
      for (const w of floorWorktrees.filter((x) => x.repoPath === repo.path))
        await gitAsync(w.repoPath, 'worktree', 'add', '-q', '--no-track', '-b', w.branch, w.worktreePath, 'main');
    }),
  );

  const half = Math.ceil(n / 2);
  const productTimes: number[] = [];
  const floorTimes: number[] = [];
  const failureCodes: Record<string, number> = {};
  let productLeft = 0;
  let floorLeft = 0;

  let profiledWorkflow: string | null = null;
  const productBatch = async (batch: typeof product) => {
    const start = performance.now();
    const accepted: ApiResponse<{ operationId?: string; workflowId?: string }>[] = await Promise.all(
      batch.map((p) => api.call('POST', `/v1/tasks/${p.taskId}/archive`, {})),
    );
    profiledWorkflow = accepted[Math.floor(accepted.length / 2)]?.body.workflowId ?? profiledWorkflow;
    const ops: string[] = [];
    for (const res of accepted) {
      if (res.status === 202 && res.body.operationId) ops.push(res.body.operationId);
      else failureCodes[errorCode(res)] = (failureCodes[errorCode(res)] ?? 0) + 1;
    }
    const states = await waitForJobs(ctx, ops);
    for (const state of states.values())
      if (state !== 'succeeded') failureCodes[state] = (failureCodes[state] ?? 0) + 1;
    productLeft += leftBehind(batch);
    productTimes.push(elapsedMs(start));
  };
  const floorBatch = async (batch: typeof floorWorktrees) => {
    const start = performance.now();
    await ctx.floor.removeWorktrees(batch);
    floorLeft += leftBehind(batch);
    floorTimes.push(elapsedMs(start));
  };

  const engineTimes: number[] = [];
  const engineBatch = async (count: number) => {
    if (shape) engineTimes.push(await ctx.engine.timeBatch(shape, count));
  };

  const productCpu = new CpuAccount(ctx.cpu);
  const floorCpu = new CpuAccount(ctx.cpu);
  const productTransactions = new TransactionAccount(ctx.pool);
  await productTransactions.around(() => productCpu.around(() => productBatch(product.slice(0, half))));
  await floorCpu.around(() => floorBatch(floorWorktrees.slice(0, half)));
  await engineBatch(half);
  await engineBatch(n - half);
  await floorCpu.around(() => floorBatch(floorWorktrees.slice(half)));
  await productTransactions.around(() => productCpu.around(() => productBatch(product.slice(half))));
  const engineSeconds = engineTimes.reduce((s, x) => s + x, 0) / 1000;

  const productSeconds = productTimes.reduce((s, x) => s + x, 0) / 1000;
  const floorSeconds = floorTimes.reduce((s, x) => s + x, 0) / 1000;
  const productRate = n / productSeconds;
  const floorRate = n / floorSeconds;
  return {
    status: 'measured',
    tasks: n,
    repositories: repos.length,
    product: {
      seconds: round(productSeconds, 3),
      worktreesPerSecond: round(productRate),
      failures: Object.values(failureCodes).reduce((s, x) => s + x, 0),
      failureCodes,
      leftBehind: productLeft,
    },
    floor: { seconds: round(floorSeconds, 3), worktreesPerSecond: round(floorRate), leftBehind: floorLeft },
    throughputRatio: ratio(productRate, floorRate),
    engine: { seconds: round(engineSeconds, 3), shape },
    throughputRatioToFloors: shape ? ratio(floorSeconds + engineSeconds, productSeconds) : NaN,
    cpuPerWorktreeMs: { product: productCpu.per(n), floor: floorCpu.per(n) },
    productTransactionsPerWorktree: round(productTransactions.total / n, 1),
    profile: profiledWorkflow
      ? await profileWorkflow(ctx.temporal, profiledWorkflow, null, serviceRoles(ctx.services))
      : null,
  };
}

/**
 * Scenario 3: many tasks on one repository launched at once (200 by default): every first
 * launch materializes a worktree in the same repository, so the per-repository serialization of
 * git admin operations is what this measures. No failure is acceptable. The floor launches as
 * many other tasks of the same repository at once in this process: the same statements and
 * spawn, its `git worktree add`s taking turns on the repository (git's admin files), as many in
 * flight as the benchmark's pool has connections. Floor first, then the product.
 */
import { taskDirName } from '../../domain/task-layout';
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { CpuAccount } from '../cpu';
import { TransactionAccount } from '../db-activity';
import { mapLimit } from '../processes';
import { elapsedMs, ratio, round, summarize, type LatencySummary } from '../stats';
import { createTasks, killAgents, makeRepo, registeredWorktrees } from '../world';

export interface ManyTasksResult {
  tasks: number;
  wallSeconds: number;
  launchesPerSecond: number;
  failures: number;
  failureCodes: Record<string, number>;
  /** Each launch's own latency (they all start together). */
  latency: LatencySummary;
  worktreesRegistered: number;
  /** Milliseconds of CPU per launch, by process group. */
  cpuPerLaunchMs: Record<string, number>;
  /** Database transactions per launch (pg_stat_database, approximate), lock polling included. */
  transactionsPerLaunch: number;
  floor: { wallSeconds: number; launchesPerSecond: number };
  /** Product wall time / floor wall time (target ≤ 1.3). */
  wallRatio: number;
}

/** Calls on one key run one after another, in the order they came (git's admin files of one repository). */
function turns(): <T>(key: string, fn: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return (key, fn) => {
    const run = (tails.get(key) ?? Promise.resolve()).then(fn, fn);
    tails.set(
      key,
      run.catch(() => {}),
    );
    return run;
  };
}

export async function runManyTasks(ctx: BenchContext): Promise<ManyTasksResult> {
  const { api, config } = ctx;
  const repo = await makeRepo(api, ctx.reposDir, 'many', config.repoFiles);
  const tasks = await createTasks(api, config.manyTasks.tasks, [repo], 'many');
  const floorTasks = await createTasks(api, config.manyTasks.tasks, [repo], 'floor many');
  const gitTurn = turns();
  const floorStart = performance.now();
  await mapLimit(floorTasks, 6, (t) => ctx.floor.materialize(t, new Map([[repo.path, repo.head]]), gitTurn));
  const floorMs = elapsedMs(floorStart);
  await killAgents(ctx.pool);

  const cpu = new CpuAccount(ctx.cpu);
  const transactions = new TransactionAccount(ctx.pool);
  let wallMs = 0;
  const results = await transactions.around(() =>
    cpu.around(async () => {
      const start = performance.now();
      const all = await Promise.all(tasks.map((t) => api.launch(t)));
      wallMs = elapsedMs(start);
      return all;
    }),
  );

  const failureCodes: Record<string, number> = {};
  for (const r of results) if (r.status !== 201) failureCodes[errorCode(r)] = (failureCodes[errorCode(r)] ?? 0) + 1;
  const failures = Object.values(failureCodes).reduce((s, n) => s + n, 0);
  const registered = registeredWorktrees(repo.path);
  const worktreesRegistered = tasks.filter((t) =>
    [...registered].some((p) => p.includes(`/${taskDirName(t)}/`)),
  ).length;
  await killAgents(ctx.pool);
  return {
    tasks: tasks.length,
    wallSeconds: round(wallMs / 1000, 3),
    launchesPerSecond: round((tasks.length - failures) / (wallMs / 1000)),
    failures,
    failureCodes,
    latency: summarize(results.filter((r) => r.status === 201).map((r) => r.ms)),
    worktreesRegistered,
    cpuPerLaunchMs: cpu.per(tasks.length),
    transactionsPerLaunch: round(transactions.total / tasks.length, 1),
    floor: { wallSeconds: round(floorMs / 1000, 3), launchesPerSecond: round(floorTasks.length / (floorMs / 1000)) },
    wallRatio: ratio(wallMs, floorMs),
  };
}

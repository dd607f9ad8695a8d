/**
 * Scenario 3: many tasks on one repository launched at once: every first launch materializes
 * a worktree in the same repository, so the per-repository serialization of git admin
 * operations is what this measures. No failure is acceptable.
 */
import { taskDirName } from '../../domain/task-layout';
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { CpuAccount } from '../cpu';
import { TransactionAccount } from '../db-activity';
import { elapsedMs, round, summarize, type LatencySummary } from '../stats';
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
}

export async function runManyTasks(ctx: BenchContext): Promise<ManyTasksResult> {
  const { api, config } = ctx;
  const repo = await makeRepo(api, ctx.reposDir, 'many', config.repoFiles);
  const tasks = await createTasks(api, config.manyTasks.tasks, [repo], 'many');

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
  const worktreesRegistered = tasks.filter((t) => [...registered].some((p) => p.includes(`/${taskDirName(t)}/`))).length;
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
  };
}

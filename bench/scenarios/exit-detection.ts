/**
 * Scenario 6: how soon an agent's exit is recorded. Agents end by themselves a moment
 * after they start; the latency is from the end their shim wrote (`ended_at`) to the moment the
 * row reads `exited`. Watched: the process that started them (the gateway, which runs launches
 * under `make start`) lives and notices at once. Unwatched: that process is SIGKILLed before the
 * agents end, and the worker's periodic check collects them. It kills the gateway, so it runs last.
 */
import type pg from 'pg';
import type { BenchContext } from '../context';
import { round, summarize, type LatencySummary } from '../stats';
import { createTasks, makeRepo, materializeTasks } from '../world';

export interface ExitDetectionResult {
  watched: LatencySummary;
  unwatched: LatencySummary;
  /** How often the worker collects unwatched exits (TWS_EXIT_CHECK_EVERY_MS). */
  checkEveryMs: number;
}

/**
 * Starts `count` agents that end `lifetimeS` after they start, on one ready task; their execution
 * ids, each added to `ids` as soon as its launch answers (the watcher reads them while launches go on).
 */
async function startEnding(
  ctx: BenchContext,
  taskId: string,
  count: number,
  lifetimeS: number,
  ids: string[] = [],
): Promise<string[]> {
  for (let i = 0; i < count; i++) {
    const res = await ctx.api.call<{ executionId: string }>('POST', `/v1/tasks/${taskId}/sessions`, {
      executorType: 'worktree',
      agentProfile: 'shell',
      command: ['sh', '-c', `sleep ${lifetimeS}; exit 0`],
    });
    if (res.status !== 201) throw new Error(`launch answered ${res.status}`);
    ids.push(res.body.executionId);
  }
  return ids;
}

/**
 * Polls the rows every 20 ms until each reads exited; the latency of each from its recorded end.
 * With `launching`, it watches while the launches still go on (ids join as they answer): an exit
 * recorded while later agents were still being launched is timed when it was recorded, not when
 * the last launch answered.
 */
async function latencies(
  pool: pg.Pool,
  ids: string[],
  timeoutMs: number,
  launching: Promise<unknown> = Promise.resolve(),
): Promise<number[]> {
  let launched = false;
  const launches = launching.finally(() => (launched = true));
  launches.catch(() => undefined); // awaited below; a failed launch ends the watch first
  const seen = new Map<string, number>();
  const deadline = Date.now() + timeoutMs;
  while ((!launched || seen.size < ids.length) && Date.now() < deadline) {
    const rows = (
      await pool.query<{ id: string; ended_at: Date }>(
        `SELECT id, ended_at FROM executions WHERE id = ANY($1::uuid[]) AND status = 'exited'`,
        [ids],
      )
    ).rows;
    const now = Date.now();
    for (const row of rows) if (!seen.has(row.id)) seen.set(row.id, now - row.ended_at.getTime());
    await new Promise((r) => setTimeout(r, 20));
  }
  await launches;
  if (seen.size < ids.length)
    throw new Error(`${ids.length - seen.size} of ${ids.length} exits not recorded within ${timeoutMs} ms`);
  return [...seen.values()].map((ms) => round(Math.max(0, ms)));
}

export async function runExitDetection(ctx: BenchContext, samples: number): Promise<ExitDetectionResult> {
  const repo = await makeRepo(ctx.api, ctx.reposDir, 'exits', 5);
  const [taskId] = await createTasks(ctx.api, 1, [repo], 'exits');
  await materializeTasks(ctx.api, [taskId!]);

  const watchedIds: string[] = [];
  const watched = await latencies(ctx.pool, watchedIds, 60_000, startEnding(ctx, taskId!, samples, 1, watchedIds));

  // Unwatched: the process that started them dies before they end (the launches take well under 10 s).
  const ids = await startEnding(ctx, taskId!, samples, 10);
  ctx.services.gateway.child.kill('SIGKILL');
  const unwatched = await latencies(ctx.pool, ids, 120_000);
  return {
    watched: summarize(watched),
    unwatched: summarize(unwatched),
    checkEveryMs: Number(process.env.TWS_EXIT_CHECK_EVERY_MS || 5000),
  };
}

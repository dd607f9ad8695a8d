/**
 * Disk measurement beside launches (judged since round 5): attach p50 with many
 * workspaces on the host (bench/seed-workspaces.ts: real worktrees, product rows) while the
 * worker's disk measurement runs back to back, against the same with it idle. The period is read
 * at start (TWS_DISK_MEASURE_EVERY_MS), so the worker is restarted for each phase: `on` measures
 * every 250 ms (a round never overlaps the next, so rounds follow each other at once), `off` once
 * at start (waited for) and then not for a day. Blocks alternate off → on → on → off …, each
 * phase on a freshly started worker, a few unmeasured attaches after each restart. The bench
 * polls the host's `disk_measured_at` once a second in both phases alike, to count the rounds.
 * At the end the workspaces are removed and the worker restarted as it first ran.
 */
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { CpuAccount } from '../cpu';
import { parkHostEnvironments } from '../parked-environments';
import { sleep } from '../processes';
import { seedWorkspaces } from '../seed-workspaces';
import { ratio, round, summarize, type LatencySummary } from '../stats';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

type Mode = 'off' | 'on';

/** The worker's setting in each phase. */
const PERIOD_MS: Record<Mode, string> = { on: '250', off: String(24 * 3_600_000) };

export interface DiskMeasurementResult {
  /** Workspaces the measurement walks in each round (seeded, plus the attach tasks' own). */
  workspaces: number;
  repoFiles: number;
  seedSeconds: number;
  parkedEnvironments: number;
  off: LatencySummary;
  on: LatencySummary;
  /** on p50 / off p50: target ≤ 1.05. */
  ratioP50: number;
  /**
   * Rounds that ended during each phase's blocks (polled once a second), and one round's length
   * while on (end to end, timed once before the first on block; up to 250 ms of it is the wait
   * for the next tick).
   */
  rounds: { off: number; on: number; roundMs: number | null };
  restarts: number;
  failures: number;
  failureCodes: Record<string, number>;
  /** Milliseconds of CPU per attach, by process group (the worker's includes its `du`s). */
  cpuPerAttachMs: { off: Record<string, number>; on: Record<string, number> };
  samplesMs: { off: number[]; on: number[] };
}

async function measuredAt(ctx: BenchContext): Promise<number | null> {
  const row = (
    await ctx.pool.query<{ at: Date | null }>(`SELECT disk_measured_at AS at FROM hosts WHERE host_id = 'bench'`)
  ).rows[0];
  return row?.at ? row.at.getTime() : null;
}

export async function runDiskMeasurement(ctx: BenchContext): Promise<DiskMeasurementResult> {
  const { api, config } = ctx;
  const { samples, block, warmup, workspaces, repositories, repoFiles, tasks } = config.disk;
  const park = await parkHostEnvironments(ctx.pool, 'bench');
  const seeded = await seedWorkspaces({
    pool: ctx.pool,
    api,
    reposDir: ctx.reposDir,
    workspaceRoot: ctx.services.workspaceRoot,
    count: workspaces,
    repositories,
    repoFiles,
  });
  ctx.log(`disk: ${seeded.count} workspaces seeded in ${seeded.seconds} s`);
  let restarts = 0;
  try {
    const repo = await makeRepo(api, ctx.reposDir, 'disk-attach', config.repoFiles);
    const attachTasks = await createTasks(api, tasks, [repo], 'disk attach');
    await materializeTasks(api, attachTasks);
    let turn = 0;
    const nextTask = () => attachTasks[turn++ % attachTasks.length]!;
    const failureCodes: Record<string, number> = {};
    const attach = async (): Promise<number | null> => {
      const res = await api.launch(nextTask());
      if (res.status === 201 && res.body.role === 'attached') return res.ms;
      failureCodes[errorCode(res)] = (failureCodes[errorCode(res)] ?? 0) + 1;
      return null;
    };

    let mode: Mode | null = null;
    let roundMs: number | null = null;
    const enter = async (next: Mode) => {
      if (mode === next) return;
      const restartedAt = Date.now();
      await ctx.services.restartWorker({ TWS_DISK_MEASURE_EVERY_MS: PERIOD_MS[next] });
      restarts++;
      // Its first round runs at start: waited for, so `off` is idle and `on` is in its stride.
      for (let waited = 0; ((await measuredAt(ctx)) ?? 0) < restartedAt; waited += 250) {
        if (waited > 600_000) throw new Error('disk: no measurement within 10 minutes of a worker start');
        await sleep(250);
      }
      // Once: how long one round of every workspace takes, from the end of one to the end of the next.
      if (next === 'on' && roundMs === null) {
        const first = (await measuredAt(ctx))!;
        for (let waited = 0; ((await measuredAt(ctx)) ?? 0) === first; waited += 100) {
          if (waited > 600_000) throw new Error('disk: no second round within 10 minutes');
          await sleep(100);
        }
        roundMs = (await measuredAt(ctx))! - first;
      }
      for (let i = 0; i < warmup; i++) await attach();
      mode = next;
    };

    const ms: Record<Mode, number[]> = { off: [], on: [] };
    const cpu: Record<Mode, CpuAccount> = { off: new CpuAccount(ctx.cpu), on: new CpuAccount(ctx.cpu) };
    const rounds = { off: 0, on: 0 };
    const pattern: Mode[] = ['off', 'on', 'on', 'off'];
    const blocks = Math.ceil(samples / block) * 2;
    for (let b = 0; b < blocks; b++) {
      const m = pattern[b % pattern.length]!;
      await enter(m);
      const n = Math.min(block, samples - ms[m].length);
      // One light query a second in both phases: which rounds ended during the block.
      let last = await measuredAt(ctx);
      let polling = true;
      const poller = (async () => {
        while (polling) {
          await sleep(1000);
          const now = await measuredAt(ctx);
          if (now !== null && last !== null && now !== last) {
            rounds[m]++;
          }
          last = now;
        }
      })();
      await cpu[m].around(async () => {
        for (let i = 0; i < n; i++) {
          const t = await attach();
          if (t !== null) ms[m].push(t);
        }
      });
      polling = false;
      await poller;
      ctx.log(`disk: block ${b + 1}/${blocks} (${m}): ${ms.off.length} off, ${ms.on.length} on`);
    }
    await killAgents(ctx.pool);
    const off = summarize(ms.off);
    const on = summarize(ms.on);
    return {
      workspaces: seeded.count + attachTasks.length,
      repoFiles,
      seedSeconds: seeded.seconds,
      parkedEnvironments: park.parked,
      off,
      on,
      ratioP50: ratio(on.p50, off.p50),
      rounds: { ...rounds, roundMs },
      restarts,
      failures: Object.values(failureCodes).reduce((s, x) => s + x, 0),
      failureCodes,
      cpuPerAttachMs: { off: cpu.off.per(ms.off.length), on: cpu.on.per(ms.on.length) },
      samplesMs: { off: ms.off.map((x) => round(x, 1)), on: ms.on.map((x) => round(x, 1)) },
    };
  } finally {
    await killAgents(ctx.pool).catch(() => 0);
    await seeded.remove();
    await park.unpark();
    // As it first ran, for the scenarios after this one.
    await ctx.services.restartWorker({});
  }
}

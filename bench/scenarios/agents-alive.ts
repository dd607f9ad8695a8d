/**
 * Scenario 13: 100 agents alive on one host (target: the worker's and the gateway's RSS
 * unchanged within 10 % against none). On a few ready tasks, attach launches start the agents
 * (`sleep 600` under the C supervisor, as every scenario's), one after another until `201`.
 *
 * A first round of as many launches, then killed, warms the services (the heap a launch needs,
 * the JIT), so what is compared is agents alive, not the first launches' growth. Then: no agent
 * alive (every one of the host's killed and gone), RSS sampled; the agents launched and every one
 * seen alive, RSS sampled again; the agents killed, sampled a third time (drift, reported). Each
 * sampling waits `settleMs`, then reads VmRSS every 250 ms for `sampleMs`: its median is the
 * figure, beside the max. The process starters' RSS (git/process-starter.ts, the parent of the
 * gateway's agents) is shown beside, not added; so is the PSS of the 100 supervisors the product
 * started (their own memory, read from /proc/<pid>/smaps_rollup of each recorded pid).
 */
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { startersOf } from '../cpu';
import { pssKb, statusKb } from '../memory';
import { sleep } from '../processes';
import { median, ratio, round } from '../stats';
import { createTasks, killAgents, liveAgentPids, makeRepo, materializeTasks } from '../world';

interface RssFigure {
  /** Median of the sampled VmRSS, in MB (the figure compared), and the highest sample. */
  rssMb: number;
  maxMb: number;
  /** Its process starter's VmRSS beside it (median), in MB; null when it has none. */
  starterRssMb: number | null;
  samples: number;
}

export interface AgentsAliveResult {
  agents: number;
  /** Agents seen alive (pid and start time) when the second sampling began. */
  alive: number;
  tasks: number;
  launchFailures: number;
  failureCodes: Record<string, number>;
  settleMs: number;
  sampleMs: number;
  none: { worker: RssFigure; gateway: RssFigure };
  withAgents: { worker: RssFigure; gateway: RssFigure };
  /** Again after the agents were killed: drift over the scenario, reported, not judged. */
  afterKill: { worker: RssFigure; gateway: RssFigure };
  /** withAgents / none (medians): target ≤ 1.10 each. */
  ratio: { worker: number; gateway: number };
  /** PSS of the supervisors the product started (the recorded pids), in MB: p50 and all of them together. */
  supervisorsPssMb: { p50: number; total: number; n: number } | null;
}

const mb = (kb: number) => round(kb / 1024, 1);

async function sampleRss(
  ctx: BenchContext,
  settleMs: number,
  sampleMs: number,
): Promise<{ worker: RssFigure; gateway: RssFigure }> {
  await sleep(settleMs);
  const pids = { worker: ctx.services.worker.pid, gateway: ctx.services.gateway.pid };
  const own: Record<'worker' | 'gateway', number[]> = { worker: [], gateway: [] };
  const starters: Record<'worker' | 'gateway', number[]> = { worker: [], gateway: [] };
  for (const end = Date.now() + sampleMs; Date.now() < end;) {
    for (const name of ['worker', 'gateway'] as const) {
      const kb = statusKb(pids[name], 'VmRSS');
      if (kb !== null) own[name].push(kb);
      const helpers = startersOf(pids[name]);
      if (helpers.length) starters[name].push(helpers.reduce((s, pid) => s + (statusKb(pid, 'VmRSS') ?? 0), 0));
    }
    await sleep(250);
  }
  const figure = (name: 'worker' | 'gateway'): RssFigure => {
    if (own[name].length === 0) throw new Error(`agents alive: the ${name}'s RSS could not be read`);
    return {
      rssMb: mb(median(own[name])),
      maxMb: mb(Math.max(...own[name])),
      starterRssMb: starters[name].length ? mb(median(starters[name])) : null,
      samples: own[name].length,
    };
  };
  return { worker: figure('worker'), gateway: figure('gateway') };
}

/** Kills every agent of the host and waits until none is alive. */
async function noAgents(ctx: BenchContext): Promise<void> {
  for (let waited = 0; ; waited += 100) {
    await killAgents(ctx.pool);
    if ((await liveAgentPids(ctx.pool)).length === 0) return;
    if (waited > 30_000) throw new Error('agents alive: agents still alive 30 s after they were killed');
    await sleep(100);
  }
}

export async function runAgentsAlive(ctx: BenchContext): Promise<AgentsAliveResult> {
  const { api, config } = ctx;
  const { agents, tasks: taskCount, settleMs, sampleMs } = config.alive;
  const repo = await makeRepo(api, ctx.reposDir, 'alive', 20);
  const tasks = await createTasks(api, taskCount, [repo], 'alive');
  await materializeTasks(api, tasks);
  const failureCodes: Record<string, number> = {};
  const launchAll = async (): Promise<number> => {
    let failures = 0;
    for (let i = 0; i < agents; i++) {
      const res = await api.launch(tasks[i % tasks.length]!);
      if (res.status === 201 && res.body.role === 'attached') continue;
      failures++;
      failureCodes[errorCode(res)] = (failureCodes[errorCode(res)] ?? 0) + 1;
    }
    return failures;
  };
  try {
    // Warm-up: as many launches, then killed.
    await launchAll();
    await noAgents(ctx);
    const none = await sampleRss(ctx, settleMs, sampleMs);
    ctx.log(`agents alive: none: worker ${none.worker.rssMb} MB, gateway ${none.gateway.rssMb} MB`);

    const launchFailures = await launchAll();
    const live = await liveAgentPids(ctx.pool);
    const pss = live.map((pid) => pssKb(pid)).filter((kb): kb is number => kb !== null);
    const withAgents = await sampleRss(ctx, settleMs, sampleMs);
    const alive = live.length;
    ctx.log(
      `agents alive: ${alive} alive: worker ${withAgents.worker.rssMb} MB, gateway ${withAgents.gateway.rssMb} MB`,
    );
    if (alive < agents) throw new Error(`agents alive: only ${alive} of ${agents} agents alive`);

    await noAgents(ctx);
    const afterKill = await sampleRss(ctx, settleMs, sampleMs);
    return {
      agents,
      alive,
      tasks: tasks.length,
      launchFailures,
      failureCodes,
      settleMs,
      sampleMs,
      none,
      withAgents,
      afterKill,
      ratio: {
        worker: ratio(withAgents.worker.rssMb, none.worker.rssMb),
        gateway: ratio(withAgents.gateway.rssMb, none.gateway.rssMb),
      },
      supervisorsPssMb: pss.length
        ? { p50: round(median(pss) / 1024, 2), total: mb(pss.reduce((s, x) => s + x, 0)), n: pss.length }
        : null,
    };
  } finally {
    await killAgents(ctx.pool).catch(() => 0);
  }
}

/**
 * What one setting read at start costs a launch, measured in one run: the same launches with the
 * setting `on` and `off`. Scenario 15 toggles agents' limits (TWS_AGENT_LIMITS: each agent in its
 * control groups, inside its task's; the sandbox's /tmp bounded) against none; scenario 16 the
 * sandbox (TWS_AGENT_SANDBOX=bwrap with its network: the agent's uid, namespaces, the hand-over of
 * its workspace) against none. The worker and the gateway (which runs the launches) are both
 * restarted for each block. Each block measures attaches on a few ready tasks and first launches of
 * new tasks (one repository each), after a few unmeasured attaches; blocks go off → on → on → off …,
 * agents killed before each restart. At the end both services are restarted as they first ran.
 */
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { round, ratio, summarize, type LatencySummary } from '../stats';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

type Mode = 'off' | 'on';
const MODES: Mode[] = ['off', 'on'];

export interface SettingToggle {
  /** Names the repository and the tasks, and the log lines. */
  name: string;
  /** The services' environment for each mode. */
  env: Record<Mode, Record<string, string>>;
  sizes: { samples: number; block: number; warmup: number; tasks: number };
}

export interface ToggleResult {
  /** The environment of each mode, as the services got it. */
  env: Record<Mode, Record<string, string>>;
  attach: Record<Mode, LatencySummary>;
  firstLaunch: Record<Mode, LatencySummary>;
  /** on p50 / off p50, attach: target ≤ 1.05. */
  attachRatioP50: number;
  /** on p50 / off p50, first launch: target ≤ 1.05. */
  firstLaunchRatioP50: number;
  restarts: number;
  failures: number;
  failureCodes: Record<string, number>;
  samplesMs: { attach: Record<Mode, number[]>; firstLaunch: Record<Mode, number[]> };
}

export async function runSettingToggle(ctx: BenchContext, toggle: SettingToggle): Promise<ToggleResult> {
  const { api, config } = ctx;
  const { samples, block, warmup, tasks } = toggle.sizes;
  let restarts = 0;
  const restart = async (extra: Record<string, string>) => {
    await killAgents(ctx.pool);
    await Promise.all([ctx.services.restartGateway(extra), ctx.services.restartWorker(extra)]);
    restarts++;
  };
  try {
    const repo = await makeRepo(api, ctx.reposDir, `${toggle.name}-attach`, config.repoFiles);
    const attachTasks = await createTasks(api, tasks, [repo], `${toggle.name} attach`);
    await materializeTasks(api, attachTasks);
    // The first launches' tasks, made beforehand (their creation is not measured).
    const fresh = await createTasks(api, samples * 2 + warmup * 2, [repo], `${toggle.name} first launch`);
    let turn = 0;
    let next = 0;
    const failureCodes: Record<string, number> = {};
    const launch = async (taskId: string, role: string): Promise<number | null> => {
      const res = await api.launch(taskId);
      if (res.status === 201 && res.body.role === role) return res.ms;
      failureCodes[errorCode(res)] = (failureCodes[errorCode(res)] ?? 0) + 1;
      return null;
    };
    const attach = () => launch(attachTasks[turn++ % attachTasks.length]!, 'attached');
    const first = () => launch(fresh[next++ % fresh.length]!, 'materialized');

    const attachMs: Record<Mode, number[]> = { off: [], on: [] };
    const firstMs: Record<Mode, number[]> = { off: [], on: [] };
    const pattern: Mode[] = ['off', 'on', 'on', 'off'];
    const blocks = Math.ceil(samples / block) * MODES.length;
    for (let b = 0; b < blocks; b++) {
      const m = pattern[b % pattern.length]!;
      await restart(toggle.env[m]);
      for (let i = 0; i < warmup; i++) await attach();
      const n = Math.min(block, samples - attachMs[m].length);
      for (let i = 0; i < n; i++) {
        const a = await attach();
        if (a !== null) attachMs[m].push(a);
        const f = await first();
        if (f !== null) firstMs[m].push(f);
      }
      ctx.log(
        `${toggle.name}: block ${b + 1}/${blocks} (${m}): ${MODES.map((x) => `${attachMs[x].length} ${x}`).join(', ')}`,
      );
    }
    const attachSummary = { off: summarize(attachMs.off), on: summarize(attachMs.on) };
    const firstSummary = { off: summarize(firstMs.off), on: summarize(firstMs.on) };
    return {
      env: toggle.env,
      attach: attachSummary,
      firstLaunch: firstSummary,
      attachRatioP50: ratio(attachSummary.on.p50, attachSummary.off.p50),
      firstLaunchRatioP50: ratio(firstSummary.on.p50, firstSummary.off.p50),
      restarts,
      failures: Object.values(failureCodes).reduce((s, x) => s + x, 0),
      failureCodes,
      samplesMs: {
        attach: { off: attachMs.off.map((x) => round(x, 1)), on: attachMs.on.map((x) => round(x, 1)) },
        firstLaunch: { off: firstMs.off.map((x) => round(x, 1)), on: firstMs.on.map((x) => round(x, 1)) },
      },
    };
  } finally {
    // As they first ran, for the scenarios after this one.
    await restart({}).catch(() => undefined);
    await killAgents(ctx.pool).catch(() => 0);
  }
}

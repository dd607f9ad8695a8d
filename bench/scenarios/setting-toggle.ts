/**
 * What one setting read at start costs a launch, measured in one run: the same launches with the
 * setting `on` and `off`. Scenario 15 toggles agents' limits (TWS_AGENT_LIMITS: each agent in its
 * control groups, inside its task's; the sandbox's /tmp bounded) against none; scenario 16 the
 * sandbox (TWS_AGENT_SANDBOX=bwrap with its network: the agent's uid, namespaces, the hand-over of
 * its workspace) against none.
 *
 * Side by side: a second host runs on this machine beside the first (its own worker and gateway,
 * the same database and engine), one host with the setting on and the other off, and every round
 * sends one attach and one first launch to each, in an order that alternates round by round. A
 * run's drift (its rows grow, the machine's other work comes and goes) then falls on both modes
 * alike, sample by sample. Halfway the hosts swap modes (both restarted), so what differs between
 * the two hosts themselves (the first one's larger history) falls on both modes alike too. Each
 * half attaches to tasks it materialized in that half's modes; agents are killed every `block`
 * rounds, on both hosts at once, and their ends recorded before the next round.
 */
import { Api, errorCode } from '../api';
import type { BenchContext } from '../context';
import { median, round, ratio, summarize, type LatencySummary } from '../stats';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

type Mode = 'off' | 'on';
const MODES: Mode[] = ['off', 'on'];

export interface SettingToggle {
  /** Names the repository and the tasks, the second host, and the log lines. */
  name: string;
  /** The services' environment for each mode. */
  env: Record<Mode, Record<string, string>>;
  /**
   * samples: attaches and first launches per mode; block: rounds between clearing the agents;
   * warmup: unmeasured attaches per host after each restart; tasks: attach tasks per host and half.
   */
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
  /** The median over rounds of on / off within the round (both measured within a second of each other). */
  attachRatioPaired: number;
  firstLaunchRatioPaired: number;
  /** on p50 / off p50 in each half (the first host on, then off). */
  halves: { attachRatioP50: number; firstLaunchRatioP50: number }[];
  restarts: number;
  failures: number;
  failureCodes: Record<string, number>;
  samplesMs: { attach: Record<Mode, number[]>; firstLaunch: Record<Mode, number[]> };
}

interface Host {
  api: Api;
  restart(env: Record<string, string>): Promise<void>;
}

export async function runSettingToggle(ctx: BenchContext, toggle: SettingToggle): Promise<ToggleResult> {
  const { config, services } = ctx;
  const { samples, block, warmup, tasks } = toggle.sizes;
  const twin = await services.startTwin(`${services.hostId}-${toggle.name}`, toggle.env.off);
  const hosts: [Host, Host] = [
    {
      api: ctx.api,
      restart: async (env) => {
        await Promise.all([services.restartGateway(env), services.restartWorker(env)]);
      },
    },
    {
      api: new Api(twin.apiBase, services.tokens.user, twin.hostId),
      restart: (env) => twin.restart(env),
    },
  ];
  let restarts = 0;
  try {
    const repos = await Promise.all(
      hosts.map((host, i) => makeRepo(host.api, ctx.reposDir, `${toggle.name}-host${i + 1}`, config.repoFiles)),
    );
    const perHalf = Math.ceil(samples / 2);
    // The first launches' tasks, made beforehand (their creation is not measured), with spares for failures.
    const fresh = await Promise.all(
      hosts.map((host, i) => createTasks(host.api, samples * 2, [repos[i]!], `${toggle.name} first launch`)),
    );
    const nextFresh = [0, 0];
    const failureCodes: Record<string, number> = {};
    const launch = async (api: Api, taskId: string, role: string): Promise<number | null> => {
      const res = await api.launch(taskId);
      if (res.status === 201 && res.body.role === role) return res.ms;
      failureCodes[errorCode(res)] = (failureCodes[errorCode(res)] ?? 0) + 1;
      return null;
    };

    const attachMs: Record<Mode, number[]> = { off: [], on: [] };
    const firstMs: Record<Mode, number[]> = { off: [], on: [] };
    const pairedAttach: number[] = [];
    const pairedFirst: number[] = [];
    const halves: ToggleResult['halves'] = [];
    for (const [half, modeOf] of [
      [1, ['on', 'off']],
      [2, ['off', 'on']],
    ] as [number, [Mode, Mode]][]) {
      await killAgents(ctx.pool, { settled: true });
      await Promise.all(hosts.map((host, i) => host.restart(toggle.env[modeOf[i]!])));
      restarts++;
      const attachTasks = await Promise.all(
        hosts.map(async (host, i) => {
          const ids = await createTasks(host.api, tasks, [repos[i]!], `${toggle.name} attach, half ${half}`);
          await materializeTasks(host.api, ids);
          return ids;
        }),
      );
      let turn = 0;
      const attach = (i: number) =>
        launch(hosts[i]!.api, attachTasks[i]![turn++ % attachTasks[i]!.length]!, 'attached');
      const first = (i: number) =>
        launch(hosts[i]!.api, fresh[i]![nextFresh[i]!++ % fresh[i]!.length]!, 'materialized');
      for (let w = 0; w < warmup; w++) for (const i of [0, 1]) await attach(i);
      const hostOf = (m: Mode) => modeOf.indexOf(m);
      const halfAttach: Record<Mode, number[]> = { off: [], on: [] };
      const halfFirst: Record<Mode, number[]> = { off: [], on: [] };
      for (let r = 0; r < perHalf; r++) {
        if (r > 0 && r % block === 0) await killAgents(ctx.pool, { settled: true });
        const order: Mode[] = r % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
        const a: Partial<Record<Mode, number | null>> = {};
        const f: Partial<Record<Mode, number | null>> = {};
        for (const m of order) a[m] = await attach(hostOf(m));
        for (const m of [...order].reverse()) f[m] = await first(hostOf(m));
        for (const m of MODES) {
          if (a[m] != null) halfAttach[m].push(a[m]!);
          if (f[m] != null) halfFirst[m].push(f[m]!);
        }
        if (a.on != null && a.off != null) pairedAttach.push(a.on / a.off);
        if (f.on != null && f.off != null) pairedFirst.push(f.on / f.off);
      }
      for (const m of MODES) {
        attachMs[m].push(...halfAttach[m]);
        firstMs[m].push(...halfFirst[m]);
      }
      const p50 = (xs: number[]) => summarize(xs).p50;
      halves.push({
        attachRatioP50: ratio(p50(halfAttach.on), p50(halfAttach.off)),
        firstLaunchRatioP50: ratio(p50(halfFirst.on), p50(halfFirst.off)),
      });
      ctx.log(
        `${toggle.name}: half ${half} (first host ${modeOf[0]}, second ${modeOf[1]}): on/off p50 attach ${halves.at(-1)!.attachRatioP50}, first launch ${halves.at(-1)!.firstLaunchRatioP50}`,
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
      attachRatioPaired: round(median(pairedAttach), 3),
      firstLaunchRatioPaired: round(median(pairedFirst), 3),
      halves,
      restarts,
      failures: Object.values(failureCodes).reduce((s, x) => s + x, 0),
      failureCodes,
      samplesMs: {
        attach: { off: attachMs.off.map((x) => round(x, 1)), on: attachMs.on.map((x) => round(x, 1)) },
        firstLaunch: { off: firstMs.off.map((x) => round(x, 1)), on: firstMs.on.map((x) => round(x, 1)) },
      },
    };
  } finally {
    // The first host as it first ran, for the scenarios after this one; the second one gone.
    // Said, never thrown over the scenario's own outcome: the scenarios after it meet what is left.
    const said = (what: string) => (err: unknown) => ctx.log(`${toggle.name}: ${what} failed: ${String(err)}`);
    await killAgents(ctx.pool).catch(said('killing the agents'));
    await twin.stop().catch(said('stopping the second host'));
    await hosts[0].restart({}).catch(said('restarting the first host as it first ran'));
  }
}

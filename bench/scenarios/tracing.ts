/**
 * Scenario 14: what tracing costs a launch (target: "tracing off costs nothing: attach p50
 * within 2 % with and without the instrumentation loaded"). With OTEL_EXPORTER_OTLP_ENDPOINT
 * unset, the product loads nothing of OpenTelemetry's SDK (worker/tracing.ts): that is the normal
 * run, `off` here. Loading it means setting the endpoint, read once at start, so the worker and
 * the gateway (which runs the launches) are both restarted for each phase:
 *
 * - `off`: the endpoint unset, as every other scenario runs: no SDK module, no interceptor, no hook;
 * - `loaded`: the endpoint set and `OTEL_TRACES_SAMPLER=always_off`: the SDK, the Temporal
 *   interceptors and the gateway's request hooks all in place, every span non-recording, nothing
 *   exported (the closest the product comes to "loaded but off");
 * - `on`: the endpoint set, every span sampled and exported (OTLP/HTTP JSON, batched as the
 *   product does by default, every 5 s) to a local sink in the benchmark process that accepts and
 *   discards them (bench/otlp-sink.ts), whose counts say they arrived.
 *
 * The judged figure is on / off (exporting everything against not loaded), the strictest of the
 * two; loaded / off is reported beside it. Blocks go off → on → loaded → loaded → on → off …, each
 * block on freshly started processes (both restarted before it, even when the phase does not
 * change) followed by a few unmeasured attaches (the JIT warms up); the agents are killed before
 * each restart. At the end both services are restarted as they first ran.
 */
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { CpuAccount } from '../cpu';
import { startOtlpSink, type SinkCounts } from '../otlp-sink';
import { round, ratio, summarize, type LatencySummary } from '../stats';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

type Mode = 'off' | 'loaded' | 'on';
const MODES: Mode[] = ['off', 'loaded', 'on'];

export interface TracingResult {
  /** What received the spans. */
  sink: string;
  off: LatencySummary;
  loaded: LatencySummary;
  on: LatencySummary;
  /** on p50 / off p50: target ≤ 1.02. */
  ratioP50: number;
  /** loaded (nothing sampled) p50 / off p50, reported. */
  loadedRatioP50: number;
  /** What reached the sink in each phase (a phase's last spans leave when its processes stop), and its launches (warm-up included). */
  exported: Record<Mode, SinkCounts & { launches: number }>;
  restarts: number;
  failures: number;
  failureCodes: Record<string, number>;
  /** Milliseconds of CPU per attach, by process group (the sink's counts with the bench's). */
  cpuPerAttachMs: Record<Mode, Record<string, number>>;
  samplesMs: Record<Mode, number[]>;
}

export async function runTracing(ctx: BenchContext): Promise<TracingResult> {
  const { api, config } = ctx;
  const { samples, block, warmup, tasks } = config.tracing;
  const sink = await startOtlpSink();
  const env: Record<Mode, Record<string, string>> = {
    off: { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' },
    loaded: {
      OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      OTEL_TRACES_SAMPLER: 'always_off',
    },
    on: {
      OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
    },
  };
  let restarts = 0;
  const restart = async (extra: Record<string, string>) => {
    await killAgents(ctx.pool);
    await Promise.all([ctx.services.restartGateway(extra), ctx.services.restartWorker(extra)]);
    restarts++;
  };
  let mode: Mode | null = null;
  try {
    const repo = await makeRepo(api, ctx.reposDir, 'tracing-attach', config.repoFiles);
    const attachTasks = await createTasks(api, tasks, [repo], 'tracing attach');
    await materializeTasks(api, attachTasks);
    let turn = 0;
    const failureCodes: Record<string, number> = {};
    const launches: Record<Mode, number> = { off: 0, loaded: 0, on: 0 };
    const attach = async (): Promise<number | null> => {
      const res = await api.launch(attachTasks[turn++ % attachTasks.length]!);
      launches[mode!]++;
      if (res.status === 201 && res.body.role === 'attached') return res.ms;
      failureCodes[errorCode(res)] = (failureCodes[errorCode(res)] ?? 0) + 1;
      return null;
    };
    // Every block on processes started for it (not only at a change of phase): with three
    // phases in the A-B-C-C-B-A order, B would otherwise never run on processes warmed by a
    // block before, A and C half the time.
    const enter = async (next: Mode) => {
      // The last spans of the block before leave as its processes stop: still counted as its own.
      await restart(env[next]);
      sink.label(next);
      mode = next;
      for (let i = 0; i < warmup; i++) await attach();
    };

    const ms: Record<Mode, number[]> = { off: [], loaded: [], on: [] };
    const cpu = Object.fromEntries(MODES.map((m) => [m, new CpuAccount(ctx.cpu)])) as Record<Mode, CpuAccount>;
    const pattern: Mode[] = ['off', 'on', 'loaded', 'loaded', 'on', 'off'];
    const blocks = Math.ceil(samples / block) * MODES.length;
    for (let b = 0; b < blocks; b++) {
      const m = pattern[b % pattern.length]!;
      await enter(m);
      const n = Math.min(block, samples - ms[m].length);
      await cpu[m].around(async () => {
        for (let i = 0; i < n; i++) {
          const t = await attach();
          if (t !== null) ms[m].push(t);
        }
      });
      ctx.log(`tracing: block ${b + 1}/${blocks} (${m}): ${MODES.map((x) => `${ms[x].length} ${x}`).join(', ')}`);
    }
    // As they first ran, for the scenarios after this one (the last phase's spans reach the sink meanwhile).
    await restart({});
    mode = null;
    const counts = sink.counts();
    const exported = Object.fromEntries(
      MODES.map((m) => [m, { requests: 0, bytes: 0, spans: 0, ...counts[m], launches: launches[m] }]),
    ) as TracingResult['exported'];
    const summary = Object.fromEntries(MODES.map((m) => [m, summarize(ms[m])])) as Record<Mode, LatencySummary>;
    return {
      sink: `OTLP/HTTP JSON to ${sink.endpoint}/v1/traces, a server in the benchmark process that answers 200 and discards`,
      ...summary,
      ratioP50: ratio(summary.on.p50, summary.off.p50),
      loadedRatioP50: ratio(summary.loaded.p50, summary.off.p50),
      exported,
      restarts,
      failures: Object.values(failureCodes).reduce((s, x) => s + x, 0),
      failureCodes,
      cpuPerAttachMs: Object.fromEntries(MODES.map((m) => [m, cpu[m].per(ms[m].length)])) as Record<
        Mode,
        Record<string, number>
      >,
      samplesMs: Object.fromEntries(MODES.map((m) => [m, ms[m].map((x) => round(x, 1))])) as Record<Mode, number[]>,
    };
  } finally {
    if (mode !== null) await restart({}).catch((err) => ctx.log(`tracing: restoring the services failed: ${err}`));
    await killAgents(ctx.pool).catch(() => 0);
    await sink.close();
  }
}

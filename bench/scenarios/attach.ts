/**
 * Scenario 1: attach launches on tasks whose environment is ready, product (HTTP → Temporal →
 * worker) against the floor (the same statements, git commands and spawn in one process),
 * interleaved in alternating blocks so the machine's noise hits both.
 */
import { launchWorkflowId } from '../../domain/workflow-ids';
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { timeLaunchSteps, type StepTimings } from '../direct-steps';
import { shapeOfWorkflow } from '../engine-floor';
import { profileWorkflow, serviceRoles, type HistoryProfile } from '../history';
import { CpuAccount } from '../cpu';
import type { FloorPhases } from '../floor';
import { elapsedMs, indexNearest, medianParts, ratio, round, summarize, type LaunchComparison } from '../stats';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

export interface AttachResult extends LaunchComparison {
  tasks: number;
  profile: HistoryProfile | null;
  /** The launch's activities called directly in the benchmark process (no Temporal). */
  directSteps: StepTimings;
}

export async function runAttach(ctx: BenchContext): Promise<AttachResult> {
  const { api, floor, config } = ctx;
  const { samples, block, warmup } = config.attach;
  const repo = await makeRepo(api, ctx.reposDir, 'attach', config.repoFiles);
  const tasks = await createTasks(api, config.attach.tasks, [repo], 'attach');
  await materializeTasks(api, tasks);
  let turn = 0;
  const nextTask = () => tasks[turn++ % tasks.length]!;

  let last = '';
  for (let i = 0; i < warmup; i++) {
    last = (await api.launchOk(nextTask(), 'attached')).sessionId;
    await floor.attach(nextTask());
  }
  // The engine floor replays the shape of the product's own attach history.
  const shape = await shapeOfWorkflow(ctx.temporal, launchWorkflowId(last));
  const engineMs: number[] = [];

  const product: { ms: number; sessionId: string }[] = [];
  const floorMs: number[] = [];
  const floorParts: FloorPhases[] = [];
  const productCpu = new CpuAccount(ctx.cpu);
  const floorCpu = new CpuAccount(ctx.cpu);
  const failureCodes: Record<string, number> = {};
  for (let b = 0; b * block < samples; b++) {
    const n = Math.min(block, samples - b * block);
    for (const kind of b % 2 === 0 ? (['product', 'floor', 'engine'] as const) : (['engine', 'floor', 'product'] as const)) {
      if (kind === 'engine') {
        for (let i = 0; i < n; i++) engineMs.push(await ctx.engine.time(shape));
        continue;
      }
      await (kind === 'product' ? productCpu : floorCpu).around(async () => {
        for (let i = 0; i < n; i++) {
          if (kind === 'product') {
            const res = await api.launch(nextTask());
            if (res.status === 201 && res.body.role === 'attached') product.push({ ms: res.ms, sessionId: res.body.sessionId });
            else failureCodes[errorCode(res)] = (failureCodes[errorCode(res)] ?? 0) + 1;
          } else {
            const start = performance.now();
            floorParts.push(await floor.attach(nextTask()));
            floorMs.push(elapsedMs(start));
          }
        }
      });
    }
    if ((b + 1) % 5 === 0) ctx.log(`attach: ${product.length}/${samples} product, ${floorMs.length}/${samples} floor`);
  }
  // Evidence for the profile, after the measurement: the same steps called directly.
  const directSteps = await timeLaunchSteps(ctx, Array.from({ length: config.attach.directSamples }, (_, i) => tasks[i % tasks.length]!), 'attached');
  await killAgents(ctx.pool);

  const productSummary = summarize(product.map((p) => p.ms));
  const floorSummary = summarize(floorMs);
  const engine = summarize(engineMs);
  const nearest = product[indexNearest(product.map((p) => p.ms), productSummary.p50)];
  return {
    tasks: tasks.length,
    product: productSummary,
    floor: floorSummary,
    floorParts: medianParts(floorParts),
    ratioP50: ratio(productSummary.p50, floorSummary.p50),
    engine,
    engineShape: shape,
    ratioToFloorsP50: ratio(productSummary.p50, floorSummary.p50 + engine.p50),
    cpuPerLaunchMs: { product: productCpu.per(samples), floor: floorCpu.per(floorMs.length) },
    failures: Object.values(failureCodes).reduce((s, n) => s + n, 0),
    failureCodes,
    profile: nearest ? await profileWorkflow(ctx.temporal, launchWorkflowId(nearest.sessionId), nearest.ms, serviceRoles(ctx.services)) : null,
    directSteps,
    samplesMs: { product: product.map((p) => round(p.ms, 1)), floor: floorMs.map((x) => round(x, 1)), engine: engineMs.map((x) => round(x, 1)) },
  };
}

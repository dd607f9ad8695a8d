/**
 * Resume (issue 17): sequential resumes of sessions whose environment is ready, each stopping the
 * session's running agent and starting a new one. Product (HTTP → the resume workflow) against
 * the bare floor (admitResume, the same validation, the stop of the previous agent, the spawn, in
 * one transaction) and the engine floor (a workflow of the resume's shape with no work), the
 * three interleaved in alternating blocks.
 */
import { resumeWorkflowId } from '../../domain/workflow-ids';
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { CpuAccount } from '../cpu';
import { shapeOfWorkflow } from '../engine-floor';
import type { FloorPhases } from '../floor';
import { profileWorkflow, serviceRoles, type HistoryProfile } from '../history';
import { elapsedMs, indexNearest, medianParts, ratio, round, summarize, type LaunchComparison } from '../stats';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

export interface ResumeResult extends LaunchComparison {
  sessions: number;
  profile: HistoryProfile | null;
}

export async function runResume(ctx: BenchContext): Promise<ResumeResult> {
  const { api, floor, config } = ctx;
  const { samples, block, warmup, tasks: taskCount } = config.resume;
  const repo = await makeRepo(api, ctx.reposDir, 'resume', config.repoFiles);
  const tasks = await createTasks(api, taskCount, [repo], 'resume');
  await materializeTasks(api, tasks);
  // Each task gets one session the product resumes and one the floor resumes, each with a running agent.
  const productSessions: string[] = [];
  const floorSessions: string[] = [];
  for (const t of tasks) {
    productSessions.push((await api.launchOk(t, 'attached')).sessionId);
    floorSessions.push((await api.launchOk(t, 'attached')).sessionId);
  }
  let pTurn = 0;
  let fTurn = 0;
  const resumeProduct = () => {
    const sessionId = productSessions[pTurn++ % productSessions.length]!;
    return api.call<{ id: string }>('POST', `/v1/sessions/${sessionId}/resume`, {}).then((res) => ({ res, sessionId }));
  };
  const runOf = async (sessionId: string) => resumeWorkflowId(sessionId, (await ctx.pool.query<{ admitted_run: string }>('SELECT admitted_run FROM sessions WHERE id = $1', [sessionId])).rows[0]!.admitted_run);

  let lastSession = '';
  for (let i = 0; i < warmup; i++) {
    const { res, sessionId } = await resumeProduct();
    if (res.status !== 200) throw new Error(`resume warm-up: ${res.status} ${JSON.stringify(res.body)}`);
    lastSession = sessionId;
    await floor.resume(floorSessions[fTurn++ % floorSessions.length]!);
  }
  const shape = await shapeOfWorkflow(ctx.temporal, await runOf(lastSession));

  const product: { ms: number; sessionId: string; workflowId: string }[] = [];
  const floorMs: number[] = [];
  const engineMs: number[] = [];
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
            const { res, sessionId } = await resumeProduct();
            if (res.status === 200) product.push({ ms: res.ms, sessionId, workflowId: '' });
            else failureCodes[errorCode(res)] = (failureCodes[errorCode(res)] ?? 0) + 1;
          } else {
            const start = performance.now();
            floorParts.push(await floor.resume(floorSessions[fTurn++ % floorSessions.length]!));
            floorMs.push(elapsedMs(start));
          }
        }
      });
    }
  }
  const productSummary = summarize(product.map((p) => p.ms));
  const floorSummary = summarize(floorMs);
  const engine = summarize(engineMs);
  // The last resume of the session nearest the median is the one whose history is still its admitted run.
  const nearest = product[indexNearest(product.map((p) => p.ms), productSummary.p50)];
  const profile = nearest ? await profileWorkflow(ctx.temporal, await runOf(nearest.sessionId), null, serviceRoles(ctx.services)) : null;
  await killAgents(ctx.pool);
  return {
    sessions: productSessions.length,
    product: productSummary,
    floor: floorSummary,
    floorParts: medianParts(floorParts),
    ratioP50: ratio(productSummary.p50, floorSummary.p50),
    engine,
    engineShape: shape,
    ratioToFloorsP50: ratio(productSummary.p50, floorSummary.p50 + engine.p50),
    cpuPerLaunchMs: { product: productCpu.per(product.length), floor: floorCpu.per(floorMs.length) },
    failures: Object.values(failureCodes).reduce((s, n) => s + n, 0),
    failureCodes,
    profile,
    samplesMs: { product: product.map((p) => round(p.ms, 1)), floor: floorMs.map((x) => round(x, 1)), engine: engineMs.map((x) => round(x, 1)) },
  };
}

/**
 * Scenario 2: the first launch of a new task, which materializes its workspace, with one and
 * with three repositories; product against the floor (worktree add per repository + the same
 * statements + spawn), the four kinds interleaved block by block.
 */
import { launchWorkflowId } from '../../domain/workflow-ids';
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { timeLaunchSteps, type StepTimings } from '../direct-steps';
import { shapeOfWorkflow } from '../engine-floor';
import type { WorkflowShape } from '../workflow-shape';
import { profileOfLaunch, type HistoryProfile } from '../history';
import { CpuAccount } from '../cpu';
import type { FloorPhases } from '../floor-steps';
import { elapsedMs, indexNearest, medianParts, ratio, round, summarize, type LaunchComparison } from '../stats';
import { createTasks, killAgents, makeRepo, type Repo } from '../world';

interface MaterializeVariant extends LaunchComparison {
  repositories: number;
}

export interface MaterializeResult {
  oneRepository: MaterializeVariant;
  threeRepositories: MaterializeVariant;
  profile: HistoryProfile | null;
  /** One-repository launches' activities called directly in the benchmark process (no Temporal). */
  directSteps: StepTimings;
}

interface Variant {
  repos: Repo[];
  productTasks: string[];
  floorTasks: string[];
  product: { ms: number; sessionId: string }[];
  floorMs: number[];
  floorParts: FloorPhases[];
  productCpu: CpuAccount;
  floorCpu: CpuAccount;
  engineMs: number[];
  shape?: WorkflowShape;
  failureCodes: Record<string, number>;
}

export async function runMaterialize(ctx: BenchContext): Promise<MaterializeResult> {
  const { api, floor, config } = ctx;
  const { samples, block, warmup } = config.materialize;
  const one = [await makeRepo(api, ctx.reposDir, 'mat-one', config.repoFiles)];
  const three = [
    await makeRepo(api, ctx.reposDir, 'mat-three-a', config.repoFiles),
    await makeRepo(api, ctx.reposDir, 'mat-three-b', config.repoFiles),
    await makeRepo(api, ctx.reposDir, 'mat-three-c', config.repoFiles),
  ];
  const baseCommits = new Map([...one, ...three].map((r) => [r.path, r.head]));
  const variant = async (repos: Repo[]): Promise<Variant> => ({
    repos,
    productTasks: await createTasks(api, samples + warmup, repos, `materialize ${repos.length}`),
    floorTasks: await createTasks(api, samples + warmup, repos, `floor materialize ${repos.length}`),
    product: [],
    floorMs: [],
    floorParts: [],
    productCpu: new CpuAccount(ctx.cpu),
    floorCpu: new CpuAccount(ctx.cpu),
    engineMs: [],
    failureCodes: {},
  });
  const v1 = await variant(one);
  const v3 = await variant(three);

  for (const v of [v1, v3]) {
    let last = '';
    for (let i = 0; i < warmup; i++) {
      last = (await api.launchOk(v.productTasks.pop()!, 'materialized')).sessionId;
      await floor.materialize(v.floorTasks.pop()!, baseCommits);
    }
    v.shape = await shapeOfWorkflow(ctx.temporal, launchWorkflowId(last));
  }

  const runProduct = async (v: Variant) => {
    const res = await api.launch(v.productTasks.pop()!);
    if (res.status === 201 && res.body.role === 'materialized')
      v.product.push({ ms: res.ms, sessionId: res.body.sessionId });
    else v.failureCodes[errorCode(res)] = (v.failureCodes[errorCode(res)] ?? 0) + 1;
  };
  const runFloor = async (v: Variant) => {
    const start = performance.now();
    v.floorParts.push(await floor.materialize(v.floorTasks.pop()!, baseCommits));
    v.floorMs.push(elapsedMs(start));
  };
  const runEngine = async (v: Variant) => {
    v.engineMs.push(await ctx.engine.time(v.shape!));
  };
  const noCpu = new CpuAccount(null);
  const kinds: [CpuAccount, () => Promise<void>][] = [
    [v1.productCpu, () => runProduct(v1)],
    [v1.floorCpu, () => runFloor(v1)],
    [noCpu, () => runEngine(v1)],
    [v3.productCpu, () => runProduct(v3)],
    [v3.floorCpu, () => runFloor(v3)],
    [noCpu, () => runEngine(v3)],
  ];
  for (let b = 0; b * block < samples; b++) {
    const n = Math.min(block, samples - b * block);
    for (const [cpu, kind] of b % 2 === 0 ? kinds : [...kinds].reverse()) {
      await cpu.around(async () => {
        for (let i = 0; i < n; i++) await kind();
      });
    }
    ctx.log(
      `materialize: ${v1.product.length + v3.product.length}/${2 * samples} product, ${v1.floorMs.length + v3.floorMs.length}/${2 * samples} floor`,
    );
  }
  // Evidence for the profile, after the measurement: the same steps called directly.
  const directTasks = await createTasks(api, config.materialize.directSamples, one, 'direct materialize');
  const directSteps = await timeLaunchSteps(ctx, directTasks, 'materialized');
  await killAgents(ctx.pool);

  const summary = (v: Variant): MaterializeVariant => {
    const product = summarize(v.product.map((p) => p.ms));
    const floorSummary = summarize(v.floorMs);
    const engine = summarize(v.engineMs);
    return {
      repositories: v.repos.length,
      product,
      floor: floorSummary,
      floorParts: medianParts(v.floorParts),
      ratioP50: ratio(product.p50, floorSummary.p50),
      engine,
      engineShape: v.shape,
      ratioToFloorsP50: ratio(product.p50, floorSummary.p50 + engine.p50),
      cpuPerLaunchMs: { product: v.productCpu.per(samples), floor: v.floorCpu.per(v.floorMs.length) },
      failures: Object.values(v.failureCodes).reduce((s, n) => s + n, 0),
      failureCodes: v.failureCodes,
      samplesMs: {
        product: v.product.map((p) => round(p.ms, 1)),
        floor: v.floorMs.map((x) => round(x, 1)),
        engine: v.engineMs.map((x) => round(x, 1)),
      },
    };
  };
  const oneRepository = summary(v1);
  const nearest =
    v1.product[
      indexNearest(
        v1.product.map((p) => p.ms),
        oneRepository.product.p50,
      )
    ];
  return {
    oneRepository,
    threeRepositories: summary(v3),
    profile: await profileOfLaunch(ctx.temporal, ctx.services, nearest),
    directSteps,
  };
}

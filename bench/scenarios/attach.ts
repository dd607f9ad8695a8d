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
import { profileOfLaunch, type HistoryProfile } from '../history';
import { compared, interleaved } from '../interleave';
import type { LaunchComparison } from '../stats';
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
  const samplesOf = await interleaved(
    ctx,
    { samples, block, label: 'attach' },
    {
      product: async () => {
        const res = await api.launch(nextTask());
        return res.status === 201 && res.body.role === 'attached'
          ? { ms: res.ms, sessionId: res.body.sessionId }
          : { failure: errorCode(res) };
      },
      floor: () => floor.attach(nextTask()),
      engine: () => ctx.engine.time(shape),
    },
  );
  // Evidence for the profile, after the measurement: the same steps called directly.
  const directSteps = await timeLaunchSteps(
    ctx,
    Array.from({ length: config.attach.directSamples }, (_, i) => tasks[i % tasks.length]!),
    'attached',
  );
  await killAgents(ctx.pool);

  const { nearest, report } = compared(samplesOf, shape);
  return {
    tasks: tasks.length,
    ...report,
    profile: await profileOfLaunch(ctx.temporal, ctx.services, nearest),
    directSteps,
  };
}

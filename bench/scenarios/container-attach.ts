/**
 * Container attach (the container executor): the worker and the gateway restarted with
 * TWS_CONTAINER_ENGINE on a `podman system service` socket of this process
 * (test/support/container-engine.ts; the engine is read at start). Tasks get a first launch with
 * executorType `container` (the worktree executor's workspace, and the environment's container
 * made from the image), then attach launches, which start an agent in the running container, are
 * timed against the container floor (the attach's statements, the same validation, and the
 * engine's own `podman exec -d` of the same command in the same container) and the engine floor
 * of the attach's shape, interleaved. At the end the agents are killed, the host's containers
 * removed and both services restarted as they first ran.
 */
import { launchWorkflowId } from '../../domain/workflow-ids';
import { containerEngineSocket, removeHostContainers } from '../../test/support/container-engine';
import { AGENT_COMMAND, errorCode, type LaunchBody } from '../api';
import type { BenchContext } from '../context';
import { shapeOfWorkflow } from '../engine-floor';
import { profileOfLaunch, type HistoryProfile } from '../history';
import type { LaunchComparison } from '../stats';
import { compared, interleaved } from '../interleave';
import { createTasks, killAgents, makeRepo } from '../world';

export interface ContainerAttachResult extends LaunchComparison {
  tasks: number;
  /** The image the environments' containers were made from (their records'). */
  image: string;
  profile: HistoryProfile | null;
}

export async function runContainerAttach(ctx: BenchContext): Promise<ContainerAttachResult> {
  const { api, floor, config } = ctx;
  const { samples, block, warmup, tasks: taskCount } = config.container;
  const socket = await containerEngineSocket();
  const restart = async (env: Record<string, string>) => {
    await Promise.all([ctx.services.restartGateway(env), ctx.services.restartWorker(env)]);
  };
  try {
    await restart({ TWS_CONTAINER_ENGINE: socket });
    const body = { executorType: 'container', agentProfile: 'shell', command: AGENT_COMMAND };
    const launch = (taskId: string) => api.call<LaunchBody>('POST', `/v1/tasks/${taskId}/sessions`, body);

    const repo = await makeRepo(api, ctx.reposDir, 'container', config.repoFiles);
    const tasks = await createTasks(api, taskCount, [repo], 'container');
    const environments: string[] = [];
    for (const t of tasks) {
      const res = await launch(t);
      if (res.status !== 201 || res.body.role !== 'materialized')
        throw new Error(`container first launch: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      environments.push(res.body.taskEnvironmentId);
    }
    // Every attach measured enters a container its first launch made: one recorded per environment.
    const { rows: containers } = await ctx.pool.query<{ image: string }>(
      'SELECT image FROM environment_containers WHERE environment_id = ANY($1)',
      [environments],
    );
    if (containers.length !== tasks.length)
      throw new Error(`container first launches: ${containers.length} containers for ${tasks.length} environments`);
    let turn = 0;
    const nextTask = () => tasks[turn++ % tasks.length]!;
    let last = '';
    for (let i = 0; i < warmup; i++) {
      const res = await launch(nextTask());
      if (res.status !== 201 || res.body.role !== 'attached')
        throw new Error(`container attach warm-up: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      last = res.body.sessionId;
      await floor.containerAttach(nextTask());
    }
    const shape = await shapeOfWorkflow(ctx.temporal, launchWorkflowId(last));

    const samplesOf = await interleaved(
      ctx,
      { samples, block, label: 'container attach' },
      {
        product: async () => {
          const res = await launch(nextTask());
          return res.status === 201 && res.body.role === 'attached'
            ? { ms: res.ms, sessionId: res.body.sessionId }
            : { failure: errorCode(res) };
        },
        floor: () => floor.containerAttach(nextTask()),
        engine: () => ctx.engine.time(shape),
      },
    );
    const { nearest, report } = compared(samplesOf, shape);
    return {
      tasks: tasks.length,
      image: containers[0]!.image,
      ...report,
      profile: await profileOfLaunch(ctx.temporal, ctx.services, nearest),
    };
  } finally {
    // The product's agents by their supervisors' groups, their ends recorded by the services that
    // started them; the floor's (`podman exec`) end with the containers.
    await killAgents(ctx.pool, { settled: true });
    await removeHostContainers(ctx.services.hostId);
    // As they first ran, for the scenarios after this one.
    await restart({});
  }
}

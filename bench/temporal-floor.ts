/**
 * Diagnostic: what Temporal itself costs on this machine when there is no work at all. A client
 * starts a workflow and waits for its result, as the gateway does for a launch, against a worker
 * in this process: an empty workflow (start, one workflow task, result), and one that runs two
 * empty local activities (the shape of an attach: admit, then the host step). Each both ways: the
 * workflow task polled by the worker from its queue (a client on its own connection, as when the
 * worker process runs a launch), and handed back with the start (eager start: the client shares
 * the worker's connection, as the gateway's does). This is the least orchestration any launch
 * through a workflow pays here, next to the attach floor.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { median, round } from './stats';

export interface TemporalFloor {
  samples: number;
  emptyWorkflowMs: number;
  twoLocalActivitiesMs: number;
  eagerEmptyWorkflowMs: number;
  eagerTwoLocalActivitiesMs: number;
}

export async function measureTemporalFloor(
  client: Client,
  address: string,
  namespace: string,
  samples = 30,
): Promise<TemporalFloor> {
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error };
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./temporal-floor-workflows'),
    logger: quiet,
  });
  const connection = await NativeConnection.connect({ address });
  const sharing = new Client({ connection, namespace });
  const taskQueue = `bench-temporal-floor-${randomUUID()}`;
  try {
    const worker = await Worker.create({
      connection,
      namespace,
      taskQueue,
      workflowBundle,
      activities: { nothing: async () => {} },
    });
    return await worker.runUntil(async () => {
      const timed = async (workflowType: string, eager: boolean): Promise<number> => {
        const start = performance.now();
        const handle = await (eager ? sharing : client).workflow.start(workflowType, {
          workflowId: `bench-floor/${randomUUID()}`,
          taskQueue,
          args: [],
          requestEagerStart: eager,
        });
        await handle.result();
        if (eager && !handle.eagerlyStarted) throw new Error('the server did not start the workflow eagerly');
        return performance.now() - start;
      };
      for (let i = 0; i < 3; i++) {
        await timed('emptyWorkflow', false); // warm-up
        await timed('emptyWorkflow', true);
      }
      const runs = { empty: [] as number[], two: [] as number[], eagerEmpty: [] as number[], eagerTwo: [] as number[] };
      for (let i = 0; i < samples; i++) {
        runs.empty.push(await timed('emptyWorkflow', false));
        runs.two.push(await timed('twoLocalActivities', false));
        runs.eagerEmpty.push(await timed('emptyWorkflow', true));
        runs.eagerTwo.push(await timed('twoLocalActivities', true));
      }
      return {
        samples,
        emptyWorkflowMs: round(median(runs.empty)),
        twoLocalActivitiesMs: round(median(runs.two)),
        eagerEmptyWorkflowMs: round(median(runs.eagerEmpty)),
        eagerTwoLocalActivitiesMs: round(median(runs.eagerTwo)),
      };
    });
  } finally {
    await connection.close();
  }
}

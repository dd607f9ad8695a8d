/**
 * Diagnostic: what Temporal itself costs on this machine when there is no work at all. A client
 * starts a workflow and waits for its result, as the gateway does for a launch, against a worker
 * in this process: an empty workflow (start, one workflow task, result), and one that runs two
 * empty local activities (the shape of an attach: admit, then the host step). This is the least
 * orchestration any launch through a workflow pays here, next to the attach floor.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { median, round } from './stats';

export interface TemporalFloor {
  samples: number;
  emptyWorkflowMs: number;
  twoLocalActivitiesMs: number;
}

export async function measureTemporalFloor(client: Client, address: string, namespace: string, samples = 30): Promise<TemporalFloor> {
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error };
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('./temporal-floor-workflows'), logger: quiet });
  const connection = await NativeConnection.connect({ address });
  const taskQueue = `bench-temporal-floor-${randomUUID()}`;
  try {
    const worker = await Worker.create({ connection, namespace, taskQueue, workflowBundle, activities: { nothing: async () => {} } });
    return await worker.runUntil(async () => {
      const timed = async (workflowType: string): Promise<number> => {
        const start = performance.now();
        await client.workflow.execute(workflowType, { workflowId: `bench-floor/${randomUUID()}`, taskQueue, args: [] });
        return performance.now() - start;
      };
      for (let i = 0; i < 3; i++) await timed('emptyWorkflow'); // warm-up
      const empty: number[] = [];
      const two: number[] = [];
      for (let i = 0; i < samples; i++) {
        empty.push(await timed('emptyWorkflow'));
        two.push(await timed('twoLocalActivities'));
      }
      return { samples, emptyWorkflowMs: round(median(empty)), twoLocalActivitiesMs: round(median(two)) };
    });
  } finally {
    await connection.close();
  }
}

/**
 * Starting the run of a prepared cleanup job (by the workflow's name, from its snapshot): the
 * follow-ups a transaction reserved, a job whose run was lost. Here, below both the activities
 * and the gateway: the activities that reserve follow-ups start them without importing the client
 * or the workflows, and the gateway starts a lost job's run without reaching into activities/.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { continuationStart, type ContinuedJob } from '../../domain/cleanup-continuation';
import type { Config } from '../../domain/config';

/**
 * Starts the run of a job whose row is prepared (it has its snapshot): a job continued after its
 * run was lost, or a follow-up reserved in its trigger's transaction. False when a run of its id
 * was started already (by another caller meanwhile).
 */
export async function startPreparedJob(
  client: Client,
  config: Pick<Config, 'taskQueue' | 'cleanupPolicy'>,
  job: ContinuedJob,
): Promise<boolean> {
  try {
    await client.workflow.start('cleanupTask', continuationStart(job, config.taskQueue, config.cleanupPolicy));
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/**
 * Starts the follow-up jobs a change reserved in its transaction (`borrow_ended`). A start that
 * fails is reported to `lost` and left: the job row is committed, and the consistency check
 * starts a `pending` job that has no run.
 */
export async function startFollowUps(
  client: Client,
  config: Pick<Config, 'taskQueue' | 'cleanupPolicy'>,
  jobs: ContinuedJob[],
  lost: (job: ContinuedJob, err: unknown) => void,
): Promise<void> {
  for (const job of jobs) await startPreparedJob(client, config, job).catch((err: unknown) => lost(job, err));
}

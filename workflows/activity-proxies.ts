/** Activity proxies by timeout class. Workflows import activity TYPES only. */
import { proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { HostActivities, RecordActivities } from '../activities';
import { STEP_HEARTBEAT_TIMEOUT_MS } from '../domain/cleanup';
import type { StartedOn } from '../domain/launch';
import { hostTaskQueue } from '../domain/workflow-ids';

/**
 * Record steps outlast a database outage: no attempt limit, tries at most 10 s apart (so the
 * step goes on within 10 s of the database answering again). With 6 attempts a step gave up
 * within half a minute of PostgreSQL going away, and the workflow failed where it stood: a
 * cleanup answered 202 kept its job row `pending` for ever. Typed outcomes are non-retryable and
 * end at once; any other fault (a bug, a missing table) fails for good after a few tries
 * (activities/failures.ts `outlastingOutages`), so only an outage is waited out.
 */
const RECORD_RETRY = { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' };
const HOST_RETRY = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  maximumAttempts: 4,
};
/**
 * A launch's or resume's own host steps (local activities, the caller waiting on the answer)
 * outlast a database outage too: four tries gave up within seconds of PostgreSQL going away and
 * the launch answered 500. Every host step is idempotent, so the re-run after the outage picks up
 * where the last try stopped; faults that are not an outage still stop after four tries.
 */
const LOCAL_HOST_RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' };

/**
 * A cancelled workflow (a launch whose session is stopped while starting) waits for the step in
 * flight to end and sees what it did, so its undo never races the step: the SDK's encoded
 * default is TRY_CANCEL (the workflow would go on while the step still runs).
 */
const WAIT_FOR_STEP = { cancellationType: 'WAIT_CANCELLATION_COMPLETED' as const };

/** Short database transactions: local activities on the worker that runs the workflow. */
export function recordSteps() {
  return proxyLocalActivities<RecordActivities>({
    startToCloseTimeout: '30 seconds',
    retry: RECORD_RETRY,
    ...WAIT_FOR_STEP,
  });
}

/**
 * Git, filesystem and process work on the host that holds the workspace: minute-scale.
 *
 * A workflow started on the queue of a host (launch and resume are, by the gateway of that host:
 * `startedOn`, from the workflow's input so that replay decides the same) runs that host's steps
 * as local activities in the same workflow task: no trip through a task queue, which was most of
 * an attach's time. A crashed worker then re-runs the step through the workflow task's own
 * timeout; every host step is idempotent. Any other host's steps, and every step of a workflow
 * on the shared queue, go to that host's queue, with heartbeats.
 */
export function hostSteps(hostId: string, startedOn?: StartedOn, heartbeatTimeoutMs = STEP_HEARTBEAT_TIMEOUT_MS) {
  if (startedOn?.hostId === hostId) {
    return proxyLocalActivities<HostActivities>({
      startToCloseTimeout: '10 minutes',
      retry: LOCAL_HOST_RETRY,
      ...WAIT_FOR_STEP,
    });
  }
  return proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(startedOn?.sharedQueue ?? workflowInfo().taskQueue, hostId),
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: heartbeatTimeoutMs,
    // Reaching the host's queue can wait for a host that restarts; it is not the work itself.
    scheduleToStartTimeout: '5 minutes',
    retry: HOST_RETRY,
    ...WAIT_FOR_STEP,
  });
}

/**
 * A merge's host steps (workflows/merge-task.ts): they move bases a user's work depends on, and each
 * is idempotent (a move run again finds the base where it left it), so, as record steps, they
 * outlast a database outage or a host's restart instead of leaving a merge half done; a fault
 * that is no outage still ends after a few tries (activities/failures.ts).
 */
export function mergeHostSteps(hostId: string, heartbeatTimeoutMs = STEP_HEARTBEAT_TIMEOUT_MS) {
  return proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(workflowInfo().taskQueue, hostId),
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: LOCAL_HOST_RETRY,
  });
}

/** The host queue a launch or resume input says its workflow was started on, if any. */
export const startedOnOf = (input: { hostId: string; sharedQueue?: string }): StartedOn | undefined =>
  input.sharedQueue ? { sharedQueue: input.sharedQueue, hostId: input.hostId } : undefined;

/**
 * A question for a host that may be gone, asked while an HTTP caller waits (a repository's
 * checks): if no worker of that host takes it within seconds, the host does not answer. One try;
 * the caller retries.
 */
export function hostQuestion(hostId: string) {
  return proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(workflowInfo().taskQueue, hostId),
    scheduleToStartTimeout: '5 seconds',
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 1 },
  });
}

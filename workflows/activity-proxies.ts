/** Activity proxies by timeout class. Workflows import activity TYPES only. */
import { proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { HostActivities, RecordActivities } from '../activities';
import { hostTaskQueue } from '../domain/workflow-ids';

/** Short database transactions: local activities on the worker that runs the workflow. */
export function recordSteps() {
  return proxyLocalActivities<RecordActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 6 },
  });
}

/** Git and filesystem work on the host that holds the workspace: minute-scale, with heartbeats. */
export function hostSteps(hostId: string) {
  return proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(workflowInfo().taskQueue, hostId),
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '30 seconds',
    // Reaching the host's queue can wait for a host that restarts; it is not the work itself.
    scheduleToStartTimeout: '5 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 4 },
  });
}

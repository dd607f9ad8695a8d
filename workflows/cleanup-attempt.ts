/** One attempt of a cleanup: each involved host does its part in one activity, the workspace's host last. */
import { ApplicationFailure, patched } from '@temporalio/workflow';
import type { CleanupInput } from '../domain/cleanup';
import { cleanupHosts, type CleanupReport, type CleanupSnapshot } from '../domain/cleanup-snapshot';
import { hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

export async function cleanupAttempt(
  input: CleanupInput,
  snapshot: CleanupSnapshot,
  report: CleanupReport,
  phase: (p: string) => void,
): Promise<CleanupReport> {
  phase('cleaning');
  // Agents on other hosts stop before the workspace's host removes anything.
  const hosts = cleanupHosts(snapshot);
  // A host that is down fails the attempt at once, before any host does its part: the job waits
  // in its retry schedule (host_unavailable) and the next attempt runs once the host is back,
  // instead of the attempt waiting minutes on a queue nobody polls.
  if (patched('cleanup-waits-for-down-host')) {
    for (const hostId of hosts) {
      if (await records.hostIsDown(hostId))
        throw ApplicationFailure.create({
          type: 'host_unavailable',
          message: 'A host of this cleanup is down.',
          nonRetryable: true,
        });
    }
  }
  let current = report;
  for (const hostId of hosts) {
    current = await hostSteps(hostId).cleanupOnHost({
      hostId,
      trigger: input.trigger,
      discardChanges: input.discardChanges,
      snapshot,
      report: current,
    });
  }
  return current;
}

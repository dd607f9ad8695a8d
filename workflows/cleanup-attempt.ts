/** One attempt of a cleanup: each involved host does its part in one activity, the workspace's host last. */
import { patched } from '@temporalio/workflow';
import type { CleanupInput } from '../domain/cleanup';
import { cleanupHosts, type CleanupReport, type CleanupSnapshot } from '../domain/cleanup-snapshot';
import { hostSteps, recordSteps } from './activity-proxies';
import { hostDownRefusal } from './cleanup-task-steps';

const records = recordSteps();

export async function cleanupAttempt(
  input: CleanupInput,
  snapshot: CleanupSnapshot,
  report: CleanupReport,
  phase: (p: string) => void,
  /** The hosts found down when the attempt began (null: an older history, which asks here, one host at a time). */
  hostsDown: string[] | null = null,
): Promise<CleanupReport> {
  phase('cleaning');
  // Agents on other hosts stop before the workspace's host removes anything.
  const hosts = cleanupHosts(snapshot);
  // A host that is down fails the attempt at once, before any host does its part: the job waits
  // in its retry schedule (host_unavailable) and the next attempt runs once the host is back,
  // instead of the attempt waiting minutes on a queue nobody polls.
  if (hostsDown !== null) {
    if (hostsDown.length > 0) throw hostDownRefusal('cleanup');
  } else if (patched('cleanup-waits-for-down-host')) {
    for (const hostId of hosts) if (await records.hostIsDown(hostId)) throw hostDownRefusal('cleanup');
  }
  let current = report;
  for (const hostId of hosts) {
    current = await hostSteps(hostId, undefined, input.policy.heartbeatTimeoutMs).cleanupOnHost({
      hostId,
      trigger: input.trigger,
      discardChanges: input.discardChanges,
      snapshot,
      report: current,
    });
  }
  return current;
}

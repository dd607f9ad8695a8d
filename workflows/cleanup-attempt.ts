/** One attempt of a cleanup: each involved host does its part in one activity, the workspace's host last. */
import type { CleanupInput, CleanupReport, CleanupSnapshot } from '../domain/cleanup';
import { hostSteps } from './activity-proxies';

export async function cleanupAttempt(input: CleanupInput, snapshot: CleanupSnapshot, report: CleanupReport, phase: (p: string) => void): Promise<CleanupReport> {
  phase('cleaning');
  // Agents on other hosts stop before the workspace's host removes anything.
  const others = [...new Set([...snapshot.processes.map((p) => p.hostId), ...(snapshot.spawnIntents ?? []).map((i) => i.hostId), ...snapshot.borrowed.map((b) => b.hostId)])].filter((h) => h !== snapshot.hostId);
  let current = report;
  for (const hostId of [...others, ...(snapshot.hostId ? [snapshot.hostId] : [])]) {
    current = await hostSteps(hostId).cleanupOnHost({ hostId, trigger: input.trigger, discardChanges: input.discardChanges, snapshot, report: current });
  }
  return current;
}

/** orphan-sweep/<id> (and the Temporal Schedule `orphan-sweep`): if the inventory cannot be read, nothing is removed. */
import type { SweepResult } from '../domain/orphans';
import { hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

export async function orphanSweep(input: { hostId: string; graceMs: number; dryRun: boolean }): Promise<SweepResult> {
  const live = await records.liveWorkspacePaths(input.hostId);
  return hostSteps(input.hostId).sweepWorkspaceRoot({ livePaths: live, graceMs: input.graceMs, dryRun: input.dryRun });
}

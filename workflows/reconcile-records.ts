/**
 * reconcile/<id> (and the Temporal Schedule `reconcile-<hostId>`): the periodic consistency
 * check. A job or session whose workflow closed while its row says it is active is repaired or
 * left for the next check; this host's agents and unrecorded starts are re-identified.
 */
import type { ReconcileReport } from '../domain/reconcile';
import { hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

export async function reconcileRecords(input: {
  hostId: string;
}): Promise<{ records: ReconcileReport; host: ReconcileReport }> {
  // 1. Rows of the whole cluster (any host's check may do it: every repair is a compare-and-set or a start that fails if already running).
  const repaired = await records.repairStrandedRecords();
  // 2. This host's processes, on its own queue.
  const host = await hostSteps(input.hostId).reconcileHostProcesses();
  return { records: repaired, host };
}

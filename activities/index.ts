import { agentProcessActivities } from './agent-process';
import { cleanupBatchActivities } from './cleanup-batch';
import { cleanupHostActivities } from './cleanup-host';
import { cleanupOnHostActivities } from './cleanup-on-host';
import { cleanupRecordActivities } from './cleanup-records';
import { coresidencyActivities } from './coresidency';
import { gitStatusHostActivities, gitStatusRecordActivities } from './git-status';
import { launchAgentActivities } from './launch-agent';
import { orphanSweepHostActivities, orphanSweepRecordActivities } from './orphan-sweep';
import { pushActivities } from './push';
import type { ActivityDeps } from '../executors/support/deps';
import { HOST_FAULT_ATTEMPTS, outlastingOutages, RECORD_FAULT_ATTEMPTS } from './failures';
import { hostRecordActivities } from './hosts';
import { idleReleaseRecordActivities } from './idle-release';
import { launchRecordActivities } from './launch-records';
import { mergeHostActivities } from './merge-host';
import { mergeRecordActivities } from './merge-records';
import { reconcileActivities } from './reconcile';
import { agentLogReadActivities } from './agent-log-read';
import { repositoryCheckActivities } from './repository-check';
import { sshTargetCheckActivities } from './ssh-target-check';
import { taskDiffActivities } from './task-diff';
import { workspaceMaterializeActivities } from './workspace-materialize';
import { workspaceValidateActivities } from './workspace-validate';

/** Activities of the shared queue: database steps, run as local activities by the workflows. */
export function createRecordActivities(deps: ActivityDeps) {
  return outlastingOutages(
    {
      ...launchRecordActivities(deps),
      ...coresidencyActivities(deps),
      ...gitStatusRecordActivities(deps),
      ...cleanupRecordActivities(deps),
      ...orphanSweepRecordActivities(deps),
      ...hostRecordActivities(deps),
      ...idleReleaseRecordActivities(deps),
      ...mergeRecordActivities(deps),
      repairStrandedRecords: reconcileActivities(deps).repairStrandedRecords,
    },
    RECORD_FAULT_ATTEMPTS,
  );
}

/** Activities of this host's queue: everything that touches the host's files and processes. */
export function createHostActivities(deps: ActivityDeps) {
  return outlastingOutages(
    {
      ...workspaceMaterializeActivities(deps),
      ...workspaceValidateActivities(deps),
      ...agentProcessActivities(deps),
      ...launchAgentActivities(deps),
      ...gitStatusHostActivities(deps),
      ...cleanupHostActivities(deps),
      ...cleanupOnHostActivities(deps),
      ...cleanupBatchActivities(deps),
      ...orphanSweepHostActivities(deps),
      ...repositoryCheckActivities(deps),
      ...agentLogReadActivities(deps),
      ...sshTargetCheckActivities(deps),
      ...mergeHostActivities(deps),
      ...pushActivities(deps),
      ...taskDiffActivities(deps),
      reconcileHostProcesses: reconcileActivities(deps).reconcileHostProcesses,
    },
    HOST_FAULT_ATTEMPTS,
  );
}

export type RecordActivities = ReturnType<typeof createRecordActivities>;
export type HostActivities = ReturnType<typeof createHostActivities>;
export type { ActivityDeps } from '../executors/support/deps';

/** A task's diff, read on the host that holds its repositories, for a gateway elsewhere [R8.1]. */
import type { DiffRequest, RepositoryDiff } from '../domain/task-diff';
import { readHostTaskDiff } from '../executors/host/task-diff';
import type { ActivityDeps } from '../executors/support/deps';
import { withHeartbeat } from '../executors/support/heartbeat';

export function taskDiffActivities(deps: ActivityDeps) {
  return {
    async readTaskDiff(request: DiffRequest): Promise<RepositoryDiff[]> {
      return withHeartbeat('task-diff', () => readHostTaskDiff(deps, request));
    },
  };
}

/** The records of finishing a task [R8]: its repositories, what may block a merge, and its operations' rows. */
import {
  beginGitOperation,
  finishGitOperation,
  markUndone,
  mergedTaskHeads,
  recordPlan,
  replacePlan,
  type GitOperationStart,
} from '../db/git-operations';
import { taskMergeFacts } from '../db/merge-facts';
import { taskRepositorySources } from '../db/merge-sources';
import type { GitOperationState, RepositoryMerged, RepositoryPlan } from '../domain/merge';
import type { ActivityDeps } from '../executors/support/deps';
import { typedFailure } from '../executors/support/failures';

export function mergeRecordActivities({ pool }: ActivityDeps) {
  return {
    async taskRepositorySources(taskId: string) {
      return taskRepositorySources(pool, taskId);
    },
    async taskMergeFacts(taskId: string) {
      const facts = await taskMergeFacts(pool, taskId);
      if (!facts) throw typedFailure('not_found');
      return facts;
    },
    async mergedTaskHeads(taskId: string) {
      return mergedTaskHeads(pool, taskId);
    },
    /** A merge's first step, one trip: its row made (`merge_in_progress` when another one of the task runs), then what it decides on. */
    async beginMerge(op: GitOperationStart) {
      if ((await beginGitOperation(pool, op)) === 'busy') throw typedFailure('merge_in_progress');
      const [facts, sources, since] = await Promise.all([
        taskMergeFacts(pool, op.taskId),
        taskRepositorySources(pool, op.taskId),
        mergedTaskHeads(pool, op.taskId),
      ]);
      if (!facts) throw typedFailure('not_found');
      return { facts, sources, since };
    },
    /** The operation's row; `merge_in_progress` when another one of the task runs. */
    async beginGitOperation(op: GitOperationStart): Promise<void> {
      if ((await beginGitOperation(pool, op)) === 'busy') throw typedFailure('merge_in_progress');
    },
    async recordMergePlan(input: { operationId: string; plan: RepositoryPlan[]; replace: boolean }) {
      if (input.replace) {
        await replacePlan(pool, input.operationId, input.plan);
        return input.plan;
      }
      return recordPlan(pool, input.operationId, input.plan);
    },
    async finishGitOperation(input: {
      operationId: string;
      state: GitOperationState;
      repositories?: RepositoryMerged[];
      error?: Record<string, unknown> | null;
    }): Promise<void> {
      await finishGitOperation(pool, input.operationId, input);
    },
    async markMergeUndone(mergeId: string): Promise<void> {
      await markUndone(pool, mergeId);
    },
  };
}

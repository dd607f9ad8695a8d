/**
 * undo-merge/<mergeId>/<operationId>: a merge undone by moving each base back by compare-and-set
 * [R8.5], only where every base is still where the merge left it; otherwise refused
 * `base_moved_since_merge` and nothing moves.
 */
import type { RepositoryPlan } from '../domain/merge';
import { mergeHostSteps as hostSteps, recordSteps } from './activity-proxies';
import { asTypedFailure, typedRefusal } from './typed-failure';

const records = recordSteps();

export interface UndoInput {
  operationId: string;
  taskId: string;
  mergeId: string;
  /** The bases the merge moved, as its plan recorded them. */
  plan: RepositoryPlan[];
}

export async function undoMerge(input: UndoInput): Promise<void> {
  await records.beginGitOperation({
    operationId: input.operationId,
    taskId: input.taskId,
    kind: 'undo',
    undoes: input.mergeId,
  });
  try {
    const current = (await Promise.all(input.plan.map((p) => hostSteps(p.hostId).baseCommits([p])))).flat();
    if (current.some((commit, i) => commit !== input.plan[i]!.after && commit !== input.plan[i]!.before))
      throw typedRefusal('base_moved_since_merge');
    const reason = `task-workspaces: undo of merge ${input.mergeId}`;
    const putBack: RepositoryPlan[] = [];
    for (const p of input.plan) {
      if ((await hostSteps(p.hostId).putBackBase({ plan: p, reason })) === 'impossible') {
        // A commit landed between the check and this base: the ones put back go forward again.
        for (const q of putBack.reverse()) await hostSteps(q.hostId).moveBase({ plan: q, reason: `${reason} refused` });
        throw typedRefusal('base_moved_since_merge');
      }
      putBack.push(p);
    }
    await records.markMergeUndone(input.mergeId);
    await records.finishGitOperation({ operationId: input.operationId, state: 'done' });
  } catch (err) {
    await records.finishGitOperation({ operationId: input.operationId, state: 'refused' });
    // A step's typed refusal is the run's own (the caller reads its code, not the step's failure).
    throw asTypedFailure(err);
  }
}

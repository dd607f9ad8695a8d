/**
 * merge-preview/<taskId>/<readId>: what a merge with a strategy would do in each repository of a
 * task, now [R8.2]: clean, conflicting (which files), already contained, or blocked (why). Nothing
 * moves: the plan's commits are made and left unreferenced.
 */
import type { MergeStrategy, PreviewOutcome } from '../domain/merge';
import { mergeMessage } from '../domain/merge';
import { mergeHostSteps as hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

export interface PreviewAnswer {
  strategy: MergeStrategy;
  repositories: ({ repositoryId: string } & PreviewOutcome)[];
}

export async function previewMerge(input: { taskId: string; strategy: MergeStrategy }): Promise<PreviewAnswer> {
  const facts = await records.taskMergeFacts(input.taskId);
  const sources = await records.taskRepositorySources(input.taskId);
  const since = await records.mergedTaskHeads(input.taskId);
  const message = mergeMessage(undefined, facts.title, input.taskId);
  const repositories = await Promise.all(
    sources.map(async (source): Promise<{ repositoryId: string } & PreviewOutcome> => {
      const repositoryId = source.repositoryId;
      const [state] = await hostSteps(source.hostId).inspectTaskRepositories([source]);
      const plan = await hostSteps(source.hostId).planMergeRepository({
        source,
        strategy: input.strategy,
        since: since[repositoryId] ?? null,
        message,
      });
      if (plan.kind === 'nothing') return { repositoryId, outcome: 'up_to_date' };
      if (facts.activeSessions.length > 0) return { repositoryId, outcome: 'blocked', blockedBy: 'session_running' };
      if (state?.dirty || facts.savedWorkRepositories.includes(repositoryId))
        return { repositoryId, outcome: 'blocked', blockedBy: 'uncommitted_changes' };
      if (plan.kind === 'conflicts') return { repositoryId, outcome: 'conflicts', conflicts: plan.conflicts };
      if (plan.kind === 'not_fast_forward') return { repositoryId, outcome: 'blocked', blockedBy: 'not_fast_forward' };
      if (plan.kind === 'base_checkout_dirty')
        return { repositoryId, outcome: 'blocked', blockedBy: 'base_checkout_dirty' };
      return { repositoryId, outcome: 'clean' };
    }),
  );
  return { strategy: input.strategy, repositories };
}

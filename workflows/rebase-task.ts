/**
 * rebase/<taskId>/<operationId>: the task's branches replayed on their current bases in their
 * worktrees [R8.4]. Running agents refuse (or are stopped when asked), uncommitted work refuses;
 * a conflict in any repository is found before any branch moves and changes nothing.
 */
import { executeChild, uuid4 } from '@temporalio/workflow';
import { stopWorkflowId } from '../domain/workflow-ids';
import { mergeHostSteps as hostSteps, recordSteps } from './activity-proxies';
import { asTypedFailure, typedRefusal } from './typed-failure';

const records = recordSteps();

export interface RebaseInput {
  operationId: string;
  taskId: string;
  repositoryIds?: string[];
  stopAgents?: boolean;
}

export interface RebaseOutcome {
  repositories: { repositoryId: string; before: string | null; after: string | null }[];
}

export async function rebaseTask(input: RebaseInput): Promise<RebaseOutcome> {
  await records.beginGitOperation({ operationId: input.operationId, taskId: input.taskId, kind: 'rebase' });
  try {
    const outcome = await carryOut(input);
    await records.finishGitOperation({ operationId: input.operationId, state: 'done' });
    return outcome;
  } catch (err) {
    await records.finishGitOperation({ operationId: input.operationId, state: 'refused' });
    // A step's typed refusal is the run's own (the caller reads its code, not the step's failure).
    throw asTypedFailure(err);
  }
}

async function carryOut(input: RebaseInput): Promise<RebaseOutcome> {
  const facts = await records.taskMergeFacts(input.taskId);
  const sources = (await records.taskRepositorySources(input.taskId)).filter(
    (s) => s.taskBranch && (!input.repositoryIds || input.repositoryIds.includes(s.repositoryId)),
  );
  if (facts.activeSessions.length > 0) {
    if (!input.stopAgents || facts.activeSessions.some((s) => s.state === 'starting'))
      throw typedRefusal('session_running');
    for (const { sessionId } of facts.activeSessions)
      await executeChild('stopSession', { workflowId: stopWorkflowId(sessionId, uuid4()), args: [sessionId] });
  }
  const states = (await Promise.all(sources.map((s) => hostSteps(s.hostId).inspectTaskRepositories([s])))).flat();
  const dirty = [
    ...states.filter((s) => s.dirty).map((s) => s.repositoryId),
    ...facts.savedWorkRepositories.filter((id) => sources.some((s) => s.repositoryId === id)),
  ];
  if (dirty.length > 0) throw typedRefusal('task_uncommitted_changes', { repositoryIds: dirty });
  const repositories: RebaseOutcome['repositories'] = [];
  for (const source of sources) {
    const answer = await hostSteps(source.hostId).rebaseTaskBranch(source);
    if (answer.kind === 'conflicts')
      throw typedRefusal('merge_conflict', {
        conflicts: [{ repositoryId: source.repositoryId, paths: answer.conflicts }],
      });
    if (answer.kind === 'stale') throw typedRefusal('merge_in_progress', { reason: 'task_branch_moved' });
    repositories.push({
      repositoryId: source.repositoryId,
      before: answer.before,
      after: answer.kind === 'rebased' ? answer.after : answer.before,
    });
  }
  return { repositories };
}

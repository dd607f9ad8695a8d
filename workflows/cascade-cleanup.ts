/**
 * cascade/<trigger>/<rootTaskId>/<operationId>: every barrier of the task tree first (one
 * transaction), then mutate deepest-first, then one child cleanup per task. The steps a board
 * delete shares (the barrier's answer, the dirty refusal, the member cleanups) are exported here.
 */
import {
  type ApplicationFailure,
  ParentClosePolicy,
  allHandlersFinished,
  condition,
  executeChild,
  patched,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError, type UpdateDefinition } from '@temporalio/common';
import {
  isTerminalJobState,
  type CleanupInput,
  type CleanupProgress,
  type CleanupTrigger,
  type RetryPolicy,
} from '../domain/cleanup';
import { emptyReport } from '../domain/cleanup-snapshot';
import { TaskIdAttr, TriggerAttr } from '../domain/search-attributes';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { inLanes } from '../domain/lanes';
import type { CascadeMember, CascadePrepared } from '../activities/cleanup-records-bulk';
import { hostSteps, recordSteps } from './activity-proxies';
import { awaitPreparedUpdate } from './cleanup-messages';
import { cleanupTask } from './cleanup-task';
import { asTypedFailure, typedRefusal } from './typed-failure';

const records = recordSteps();

export interface CascadeInput {
  rootTaskId: string;
  operationId: string;
  trigger: CleanupTrigger;
  discardChanges: boolean;
  policy: RetryPolicy;
}

/**
 * The update a caller waits on answers once the preparation committed (`prepared()`), or with
 * its typed refusal (`refuse()`, which ends the workflow after the answer went out).
 */
export function preparationBarrier<T>(update: UpdateDefinition<T, []>, answer: () => T) {
  let prepared = false;
  let refusal: ApplicationFailure | null = null;
  setHandler(update, async () => {
    await condition(() => prepared || refusal !== null);
    if (refusal) throw refusal;
    return answer();
  });
  return {
    prepared(): void {
      prepared = true;
    },
    async refuse(err: unknown): Promise<never> {
      refusal = asTypedFailure(err);
      await condition(allHandlersFinished);
      throw refusal;
    },
  };
}

/** A member of a bulk cleanup: its task, a new operation and the workflow id its own run would have. */
export function newMember(trigger: CleanupTrigger, taskId: string): CascadeMember {
  const operationId = uuid4();
  return { taskId, operationId, workflowId: cleanupWorkflowId(trigger, taskId, operationId) };
}

/**
 * How many members of a bulk delete (a board's tasks) are read or cleaned at once. Each member
 * keeps its own job and its own cleanup run; their worktree removals still serialize per
 * repository (the repository lock), so lanes overlap the rest: the records, the agents' stops,
 * other repositories, the engine's round trips.
 */
export const BULK_LANES = 8;

/** A delete without consent is refused before any change when a worktree of any member is dirty. */
export async function refuseDirtyMembers(members: { taskId: string }[], lanes = 1): Promise<void> {
  const dirty = (
    await inLanes(members, lanes, async (m) => {
      const preview = await records.previewWorktrees(m.taskId);
      return preview.hostId ? await hostSteps(preview.hostId).findDirtyWorktrees(preview.worktrees) : [];
    })
  ).flat();
  if (dirty.length > 0) throw typedRefusal('task_delete_dirty_worktree', { dirtyRepositories: [...new Set(dirty)] });
}

/**
 * One child cleanup per prepared member, in order, each its own job (retried and watched by
 * itself); abandoned on close, so a child outlives this workflow's end.
 */
export async function cleanMembers(
  members: CascadeMember[],
  input: { trigger: CleanupTrigger; discardChanges: boolean; policy: RetryPolicy },
  lanes = 1,
): Promise<CleanupProgress[]> {
  const results = await inLanes(members, lanes, async (m): Promise<CleanupProgress> => {
    const child: CleanupInput = {
      operationId: m.operationId,
      taskId: m.taskId,
      trigger: input.trigger,
      discardChanges: input.discardChanges,
      policy: input.policy,
      alreadyPrepared: true,
    };
    try {
      return await executeChild(cleanupTask, {
        workflowId: m.workflowId,
        args: [child],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [
          { key: TaskIdAttr, value: m.taskId },
          { key: TriggerAttr, value: input.trigger },
        ],
      });
    } catch (err) {
      // A member that waited long for its turn may have been started by the consistency check
      // (a prepared job with no run, older than a minute, is continued by a run of its own,
      // under the same workflow id). Its job goes on in that run, whose outcome this lane waits
      // for as it would for its own child's (read from the job's row), while the others go on.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      return outcomeOfItsOwnRun(m, input.trigger);
    }
  });
  await condition(allHandlersFinished);
  return results;
}

/** How many tasks one batch step carries out, and how many batch steps run at once. */
const BATCH_SIZE = 50;
const BATCH_LANES = 4;

/**
 * A bulk cleanup in batches: the members a batch can carry out (every part of the job
 * on one host, domain/cleanup-snapshot.ts batchHostOf) are cleaned by host steps of BATCH_SIZE tasks,
 * whose removals share the repositories' turns; each task keeps its job row (state, attempts,
 * last error, report), and this run's result shows each task's outcome. The others (and a
 * batched task whose attempt failed, let go by its batch) get child runs of their own, as before.
 */
export async function cleanMembersInBatches(
  members: CascadeMember[],
  input: { trigger: CleanupTrigger; discardChanges: boolean; policy: RetryPolicy },
  lanes: number,
): Promise<CleanupProgress[]> {
  const batchWorkflowId = workflowInfo().workflowId;
  const taskOf = new Map(members.map((m) => [m.operationId, m.taskId]));
  const outcomes = new Map<string, CleanupProgress>();
  const batches = (await records.batchPlan(members.map((m) => m.operationId))).flatMap(({ hostId, operationIds }) =>
    Array.from({ length: Math.ceil(operationIds.length / BATCH_SIZE) }, (_, i) => ({
      hostId,
      operationIds: operationIds.slice(i * BATCH_SIZE, (i + 1) * BATCH_SIZE),
    })),
  );
  await inLanes(batches, BATCH_LANES, async ({ hostId, operationIds }) => {
    try {
      const done = await hostSteps(hostId, undefined, input.policy.heartbeatTimeoutMs).cleanupBatchOnHost({
        batchWorkflowId,
        hostId,
        operationIds,
        trigger: input.trigger,
        discardChanges: input.discardChanges,
      });
      for (const d of done) {
        if (d.state !== 'succeeded') continue;
        outcomes.set(d.operationId, {
          operationId: d.operationId,
          taskId: taskOf.get(d.operationId)!,
          trigger: input.trigger,
          state: 'succeeded',
          phase: 'succeeded',
          attempts: d.attempts,
          nextAttemptAt: null,
          lastError: null,
          report: d.report,
        });
      }
    } catch {
      // The step failed for good (its host went away): its tasks are let go, each to a run of its own.
      await records.releaseBatch({ operationIds, batchWorkflowId });
    }
  });
  // The rest: a job that ended meanwhile (an operator's cancel) is read from its row; the others run on their own.
  const rest: CascadeMember[] = [];
  for (const m of members) {
    if (outcomes.has(m.operationId)) continue;
    const row = await records.jobProgress(m.operationId);
    if (row && isTerminalJobState(row.state)) outcomes.set(m.operationId, row);
    else rest.push(m);
  }
  const theirs = await cleanMembers(rest, input, lanes);
  rest.forEach((m, i) => outcomes.set(m.operationId, theirs[i]!));
  return members.map((m) => outcomes.get(m.operationId)!);
}

/** Checks of a member's job carried out by a run this workflow did not start, until it ends. */
const CONTINUED_JOB_CHECK_EVERY = '5 seconds';

async function outcomeOfItsOwnRun(m: CascadeMember, trigger: CleanupTrigger): Promise<CleanupProgress> {
  for (;;) {
    const progress = await records.jobProgress(m.operationId);
    if (!progress)
      return {
        operationId: m.operationId,
        taskId: m.taskId,
        trigger,
        state: 'cancelled',
        phase: 'gone',
        attempts: 0,
        nextAttemptAt: null,
        lastError: null,
        report: emptyReport(),
      };
    if (progress.state === 'succeeded' || progress.state === 'cancelled') return progress;
    await sleep(CONTINUED_JOB_CHECK_EVERY);
  }
}

export async function cascadeCleanup(input: CascadeInput): Promise<CleanupProgress[]> {
  const members: CascadeMember[] = [];
  const skipped: CascadePrepared['skipped'] = [];
  const barrier = preparationBarrier(awaitPreparedUpdate, () => ({
    operationId: input.operationId,
    operations: members.map((m) => ({ taskId: m.taskId, operationId: m.operationId })),
    skipped,
  }));

  try {
    // A re-run after the preparation committed (the engine or the worker died before this
    // workflow task was recorded) continues with the members it prepared: the tree it would read
    // again is already archived or deleted by that preparation.
    const preparedBefore = patched('cascade-prepared-members') ? await records.cascadeMembers(input.operationId) : [];
    if (preparedBefore.length > 0) {
      members.push(...preparedBefore);
    } else {
      const tree = await records.taskTree(input.rootTaskId);
      for (const taskId of tree) {
        const operationId = taskId === input.rootTaskId ? input.operationId : uuid4();
        members.push({ taskId, operationId, workflowId: cleanupWorkflowId(input.trigger, taskId, operationId) });
      }
      if (input.trigger === 'delete' && !input.discardChanges) await refuseDirtyMembers(members);
      const outcome = await records.prepareCascade({
        trigger: input.trigger,
        members,
        cascadeOperationId: input.operationId,
        discardChanges: input.discardChanges,
      });
      // A history from before the step answered (it prepared every member) has no outcome.
      if (outcome) {
        members.splice(0, members.length, ...outcome.prepared);
        skipped.push(...outcome.skipped);
      }
    }
  } catch (err) {
    await barrier.refuse(err);
  }
  barrier.prepared();

  // Deepest first: children finish before their parents.
  return cleanMembers(members, input);
}

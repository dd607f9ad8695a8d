/**
 * cascade/board_delete/<boardId>/<operationId>: a board delete is a cascade over the board's
 * tasks [R6]. Members are the tasks whose board is this one (their children on other boards
 * stay); a task under a cleanup job of its own is no member: it leaves the board, its job goes on.
 *   1. Read the members; without consent, refuse (409 task_delete_dirty_worktree) if any
 *      worktree of any member is dirty, before anything changes.
 *   2. ONE transaction: every member's job reserved (the barrier), snapshots, tasks deleted, the
 *      board deleted. The caller's 202 waits for it (the `awaitBoardPrepared` update).
 *   3. The members' cleanups in batches (cascade-cleanup.ts cleanMembersInBatches): a host step
 *      per BATCH_SIZE tasks whose removals share the repositories' turns, each task's job row
 *      kept and its outcome in this run's result; a task that needs more than one place, or whose
 *      batched attempt failed, gets a child cleanupTask of its own (retried and watched, and
 *      retried by an operator, by itself), BULK_LANES of them at a time.
 */
import { ApplicationFailure, patched } from '@temporalio/workflow';
import { awaitBoardPreparedUpdate } from './cleanup-messages';
import type { CascadeMember } from '../activities/cleanup-records-bulk';
import type { CleanupProgress, RetryPolicy } from '../domain/cleanup';
import { recordSteps } from './activity-proxies';
import {
  BULK_LANES,
  cleanMembers,
  cleanMembersInBatches,
  newMember,
  preparationBarrier,
  refuseDirtyMembers,
} from './cascade-cleanup';

const records = recordSteps();

export interface BoardDeleteInput {
  boardId: string;
  operationId: string;
  discardChanges: boolean;
  policy: RetryPolicy;
}

/** How often the members are read and checked again when tasks keep joining the board meanwhile. */
const PREPARATION_ROUNDS = 3;

export async function boardDelete(input: BoardDeleteInput): Promise<CleanupProgress[]> {
  const lanes = patched('board-members-in-lanes') ? BULK_LANES : 1;
  let members: CascadeMember[] = [];
  const barrier = preparationBarrier(awaitBoardPreparedUpdate, () => ({
    operationId: input.operationId,
    operations: members.map((m) => ({ taskId: m.taskId, operationId: m.operationId })),
  }));
  try {
    // A re-run after the preparation committed continues with the members it prepared; the
    // board it deleted is no refusal (an empty board left no member to find: prepare says `gone`).
    members = await records.cascadeMembers(input.operationId);
    if (members.length === 0) members = await prepare(input, lanes);
  } catch (err) {
    await barrier.refuse(err);
  }
  barrier.prepared();
  const memberInput = { trigger: 'board_delete' as const, discardChanges: input.discardChanges, policy: input.policy };
  // In batches per host, their removals in shared turns per repository (runs recorded before had a child run per task).
  if (patched('board-delete-in-batches')) return cleanMembersInBatches(members, memberInput, lanes);
  // A board's tasks are independent: their cleanups run BULK_LANES at a time (runs recorded before ran them one by one).
  return cleanMembers(
    members,
    { trigger: 'board_delete', discardChanges: input.discardChanges, policy: input.policy },
    lanes,
  );
}

/** Steps 1 and 2; read again when a task joined the board after its members were checked (never deleted unchecked). */
async function prepare(input: BoardDeleteInput, lanes: number): Promise<CascadeMember[]> {
  for (let round = 1; round <= PREPARATION_ROUNDS; round++) {
    const taskIds = await records.boardMembers(input.boardId);
    if (taskIds === null) return []; // deleted meanwhile (by this operation, or another)
    const members = taskIds.map((taskId) => newMember('board_delete', taskId));
    if (!input.discardChanges) await refuseDirtyMembers(members, lanes);
    const outcome = await records.prepareBoardDelete({
      boardId: input.boardId,
      members,
      cascadeOperationId: input.operationId,
    });
    if (outcome.kind === 'prepared') return outcome.members;
    if (outcome.kind === 'gone') return [];
  }
  // The board keeps changing under the delete: nothing was changed, the caller may retry.
  throw ApplicationFailure.create({
    type: 'task_cleanup_in_progress',
    message: 'The board changed while its delete was prepared.',
    nonRetryable: true,
  });
}

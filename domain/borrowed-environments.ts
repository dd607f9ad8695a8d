/**
 * What a cleanup does with its task's environment while other tasks use it [R6.5], as data.
 *
 * A task stands for an environment it does not own only while it is live: it exists, is not
 * archived, and no archive or delete of it is under way. A live task BORROWS the environment when
 * one of its sessions, in any state, points at it (a stopped session comes back to the same
 * workspace); it is a GROUP MEMBER when the environment is its shared group's. Archived and
 * deleted tasks protect nothing.
 *
 * The owner's cleanup then hands the environment over (one compare-and-set of its owner: the
 * inventory follows), keeps it (an archive's environment that a non-member still borrows: the
 * `borrow_ended` follow-up cleans it once the last borrower is gone), or cleans it.
 */
import type { CleanupTrigger } from './cleanup';

export interface SuccessorCandidate {
  taskId: string;
  groupMember: boolean;
  borrows: boolean;
  /**
   * It can own the environment: it owns none (one environment per task) and, unless it already
   * works in it, every repository it has is held there (else its own launches would be refused).
   */
  fits: boolean;
}

/**
 * - `hand_over`: the owner goes away (delete): a group member, else a borrower, takes it.
 * - `hand_over_to_group`: the owner is archived: a group member takes it, so the group keeps
 *   launching and attaching; a borrower outside the group only keeps it from being cleaned.
 * - `release`: the owner stays (a reset, an abandonment, an idle release) and no task using it
 *   runs an agent (the preparation refuses `session_running` under the task's lock, and an idle
 *   release looks again there): it is released for all of them, and the next launch or resume of
 *   any of them makes it again. An idle release saves its work first [R6.9, R6.10]; a reset
 *   removes what its audit allows; an abandonment touches no file. Kept for an idle borrower, a
 *   group's workspace was never released, reset nor abandoned while two members had sessions on
 *   it: the job said `succeeded` with nothing done.
 */
type BorrowedRule = 'hand_over' | 'hand_over_to_group' | 'release';

const BORROWED_ENVIRONMENT_RULE: Record<CleanupTrigger, BorrowedRule> = {
  archive: 'hand_over_to_group',
  // The follow-up cleans as the owner's archive would have.
  borrow_ended: 'hand_over_to_group',
  delete: 'hand_over',
  board_delete: 'hand_over',
  quick_chat_expiry: 'hand_over',
  environment_reset: 'release',
  environment_abandon: 'release',
  idle_release: 'release',
};

export type BorrowedDecision = { action: 'clean' } | { action: 'kept' } | { action: 'handed_over'; toTaskId: string };

/**
 * The decision for candidates in the caller's order of preference (a borrower before a task
 * that only could borrow). A delete whose borrowers cannot take the environment cleans it: its
 * owner's row goes, and an environment with no owner would be known to no one.
 */
export function decideBorrowedEnvironment(trigger: CleanupTrigger, candidates: SuccessorCandidate[]): BorrowedDecision {
  const rule = BORROWED_ENVIRONMENT_RULE[trigger];
  const members = candidates.filter((c) => c.fits && c.groupMember);
  const borrowers = candidates.filter((c) => c.borrows);
  switch (rule) {
    case 'release':
      return { action: 'clean' };
    case 'hand_over': {
      const successor = members[0] ?? borrowers.find((c) => c.fits);
      return successor ? { action: 'handed_over', toTaskId: successor.taskId } : { action: 'clean' };
    }
    case 'hand_over_to_group':
      if (members[0]) return { action: 'handed_over', toTaskId: members[0].taskId };
      return borrowers.length > 0 ? { action: 'kept' } : { action: 'clean' };
  }
}

import { describe, expect, it } from 'vitest';
import { decideBorrowedEnvironment, type SuccessorCandidate } from '../../domain/borrowed-environments';
import { CLEANUP_TRIGGERS, cancelledByUnarchive, takesTaskAway } from '../../domain/cleanup';

const borrower: SuccessorCandidate = { taskId: 'borrower', groupMember: false, borrows: true, fits: true };
const member: SuccessorCandidate = { taskId: 'member', groupMember: true, borrows: false, fits: true };
const misfit: SuccessorCandidate = { taskId: 'misfit', groupMember: true, borrows: false, fits: false };

describe('what an owner’s cleanup does with an environment other live tasks stand for [R6.5]', () => {
  it('no one stands for it: every trigger cleans it', () => {
    for (const t of CLEANUP_TRIGGERS) expect(decideBorrowedEnvironment(t, [])).toEqual({ action: 'clean' });
  });

  it('archive and its follow-up hand it to a group member, keep it for a borrower outside the group', () => {
    for (const t of ['archive', 'borrow_ended'] as const) {
      expect(decideBorrowedEnvironment(t, [borrower, member])).toEqual({ action: 'handed_over', toTaskId: 'member' });
      expect(decideBorrowedEnvironment(t, [borrower])).toEqual({ action: 'kept' });
      // A member whose repositories the environment does not hold could not attach: not a successor.
      expect(decideBorrowedEnvironment(t, [misfit])).toEqual({ action: 'clean' });
    }
  });

  it('delete hands it to a group member, else to a borrower', () => {
    expect(decideBorrowedEnvironment('delete', [borrower, member])).toEqual({
      action: 'handed_over',
      toTaskId: 'member',
    });
    expect(decideBorrowedEnvironment('board_delete', [borrower])).toEqual({
      action: 'handed_over',
      toTaskId: 'borrower',
    });
    expect(decideBorrowedEnvironment('delete', [{ ...borrower, fits: false }])).toEqual({ action: 'clean' });
  });

  it('a reset, an abandonment and an idle release release it for every task using it, borrowers and members alike: none runs [R6.9]', () => {
    for (const t of ['environment_reset', 'idle_release', 'environment_abandon'] as const) {
      expect(decideBorrowedEnvironment(t, [borrower, member])).toEqual({ action: 'clean' });
      expect(decideBorrowedEnvironment(t, [borrower])).toEqual({ action: 'clean' });
    }
  });

  it('archive and delete take the task away; unarchive cancels the archive and its follow-up', () => {
    expect(CLEANUP_TRIGGERS.filter(takesTaskAway)).toEqual(['archive', 'delete', 'board_delete', 'quick_chat_expiry']);
    expect(CLEANUP_TRIGGERS.filter(cancelledByUnarchive)).toEqual(['archive', 'borrow_ended']);
  });
});

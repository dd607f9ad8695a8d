/** The merge preview of all of a task's repositories as one word: the merge button's rule. Pure. */
export type Outcome = 'clean' | 'conflicts' | 'up_to_date' | 'blocked';

/** Any conflict or block wins; clean when at least one repository has something to merge. */
export function overallOutcome(outcomes: readonly Outcome[]): Outcome {
  if (outcomes.includes('conflicts')) return 'conflicts';
  if (outcomes.includes('blocked')) return 'blocked';
  if (outcomes.includes('clean')) return 'clean';
  return 'up_to_date';
}

export const BLOCKED_TEXT: Record<string, string> = {
  uncommitted_changes: 'it has uncommitted changes: commit them, or let the merge commit them',
  session_running: 'an agent is running: stop it first',
  base_checkout_dirty: "the base branch's checkout has overlapping uncommitted changes: an operator has to clean it",
  not_fast_forward: 'the base moved on: rebase the task, or choose another strategy',
};

/** An idempotency key: one per click, so a retried request is the same merge. */
export function idempotencyKey(random: (bytes: Uint8Array) => Uint8Array): string {
  return Array.from(random(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

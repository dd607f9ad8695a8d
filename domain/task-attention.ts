/**
 * What the board says of a task beyond its own row [console board]: whether an agent is at work,
 * and why a person must look. The reasons, in the order the first that holds is told (what only an
 * operator can settle first); db/task-attention.ts reads them.
 */
export type TaskActivity = 'working' | 'idle';

export const ATTENTION_REASONS = [
  'cleanup_needs_operator',
  'merge_needs_operator',
  'merge_conflict',
  'restore_conflict',
  'launch_failed',
] as const;
export type AttentionReason = (typeof ATTENTION_REASONS)[number];

export interface TaskAttention {
  reason: AttentionReason;
  /** The merge or cleanup job it is about (null for a launch or a restore). */
  operationId: string | null;
  /** The session whose launch failed or whose restore conflicted (null for a merge or a cleanup). */
  sessionId: string | null;
}

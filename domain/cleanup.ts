/**
 * Durable task-owned cleanup [R6], as data: triggers, job states, the snapshot a job carries,
 * and the bounded retry schedule.
 */
export const CLEANUP_TRIGGERS = ['archive', 'delete', 'board_delete', 'quick_chat_expiry', 'environment_reset'] as const;
export type CleanupTrigger = (typeof CLEANUP_TRIGGERS)[number];

export type CleanupJobState = 'prepared' | 'pending' | 'running' | 'retry_wait' | 'needs_operator' | 'succeeded' | 'cancelled';
export const ACTIVE_JOB_STATES: CleanupJobState[] = ['prepared', 'pending', 'running', 'retry_wait', 'needs_operator'];

/** Triggers that remove the task (and so may remove its merged branch); the others keep the branch. */
export const removesTask = (trigger: CleanupTrigger): boolean => trigger === 'delete' || trigger === 'board_delete';

/** One worktree (or inventory-only slot) the job must account for, copied from the inventory. */
export interface SnapshotWorktree {
  environmentId: string;
  inventoryRowId: string;
  repositoryId: string;
  sourcePath: string;
  worktreeId: string | null;
  worktreePath: string | null;
  branch: string | null;
  headCommit: string | null;
  baseBranch: string;
  /** The branch is the task's own (created for it), so delete may remove it when merged. */
  taskOwnsBranch: boolean;
  status: 'active' | 'retained';
}

export interface SnapshotProcess {
  executionId: string;
  hostId: string;
  pid: number;
  processStartTime: string;
}

export interface CleanupSnapshot {
  taskId: string;
  environmentId: string | null;
  hostId: string | null;
  taskFolder: string | null;
  worktrees: SnapshotWorktree[];
  processes: SnapshotProcess[];
  /** Agent starts not yet recorded when the snapshot was taken (their spawn may have died midway): stopped by their mark. Absent in older snapshots. */
  spawnIntents?: { executionId: string; hostId: string }[];
  /** The task's sessions, whose agent logs a delete removes (archive keeps them). Absent in older snapshots. */
  sessionIds?: string[];
  /** Environments left alone (archive) or handed over (delete) because another task's session uses them. */
  borrowed: { environmentId: string; action: 'kept' | 'handed_over'; toTaskId: string | null; hostId: string; taskFolder: string | null }[];
}

export type WorktreeOutcome =
  | 'removed'
  | 'already_gone'
  | 'kept_dirty'
  | 'saved_and_removed'
  | 'inventory_only';

export interface CleanupReport {
  worktrees: { repositoryId: string; worktreePath: string | null; outcome: WorktreeOutcome; savedRef?: string }[];
  branches: { repositoryId: string; branch: string; outcome: 'kept' | 'deleted_merged' | 'kept_unmerged' }[];
  processesStopped: number;
  borrowed: CleanupSnapshot['borrowed'];
}

export const emptyReport = (): CleanupReport => ({ worktrees: [], branches: [], processesStopped: 0, borrowed: [] });

/** Classified reasons a cleanup attempt failed: short, stable, never raw command output. */
export type CleanupErrorClass =
  | 'git_worktree_remove_failed'
  | 'git_prune_failed'
  | 'worktree_audit_failed'
  | 'worktree_still_registered'
  | 'process_stop_failed'
  | 'branch_cleanup_failed'
  | 'save_uncommitted_failed'
  | 'database_failed'
  | 'host_unavailable'
  | 'internal';

export interface RetryPolicy {
  /** Waits between attempts, in milliseconds; the last one repeats if attempts outnumber it. */
  waitsMs: number[];
  maxAttempts: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  waitsMs: [1 * MINUTE, 5 * MINUTE, 15 * MINUTE, 1 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR],
  maxAttempts: 8,
};

/** The wait after failed attempt number `attempt` (1-based), or null when the round is exhausted. */
export function waitAfterAttempt(policy: RetryPolicy, attempt: number): number | null {
  if (attempt >= policy.maxAttempts) return null;
  return policy.waitsMs[Math.min(attempt - 1, policy.waitsMs.length - 1)] ?? null;
}

export interface CleanupInput {
  operationId: string;
  taskId: string;
  trigger: CleanupTrigger;
  discardChanges: boolean;
  policy: RetryPolicy;
  /** Set by a cascade, which reserved the barrier, took the snapshot and mutated the task already. */
  alreadyPrepared: boolean;
}

export interface CleanupProgress {
  operationId: string;
  taskId: string;
  trigger: CleanupTrigger;
  state: CleanupJobState;
  phase: string;
  attempts: number;
  nextAttemptAt: string | null;
  lastError: CleanupErrorClass | null;
  report: CleanupReport;
}

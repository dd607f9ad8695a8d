/**
 * Durable task-owned cleanup [R6], as data: triggers and their rules, job states, the classified
 * failures and the bounded retry schedule, and a job's input and progress. The snapshot a job
 * carries and the report it makes are domain/cleanup-snapshot.ts.
 */
import type { CancelledBy, CleanupReport } from './cleanup-snapshot';

/**
 * `borrow_ended`: the follow-up of an archive that kept its environment for another task's
 * sessions, once the last of those borrowers is archived, deleted or has no session left in it;
 * it cleans the archived owner's environment as that archive would have (domain/borrowed-environments.ts).
 */
export const CLEANUP_TRIGGERS = [
  'archive',
  'delete',
  'board_delete',
  'quick_chat_expiry',
  'environment_reset',
  'environment_abandon',
  'borrow_ended',
  'idle_release',
] as const;
export type CleanupTrigger = (typeof CLEANUP_TRIGGERS)[number];

export const CLEANUP_JOB_STATES = [
  'prepared',
  'pending',
  'running',
  'retry_wait',
  'needs_operator',
  'succeeded',
  'cancelled',
] as const;
export type CleanupJobState = (typeof CLEANUP_JOB_STATES)[number];
export const ACTIVE_JOB_STATES: CleanupJobState[] = ['prepared', 'pending', 'running', 'retry_wait', 'needs_operator'];

/** A job that ended: nothing more happens to it. */
export const isTerminalJobState = (state: CleanupJobState): boolean => state === 'succeeded' || state === 'cancelled';

/**
 * Triggers that remove the task (and so may remove its merged branch); the others keep the branch.
 * Quick-chat expiry deletes, as the original system does: a quick chat no one returned to.
 */
export const removesTask = (trigger: CleanupTrigger): boolean =>
  trigger === 'delete' || trigger === 'board_delete' || trigger === 'quick_chat_expiry';

/**
 * What a removal does with a dirty worktree: `save` (uncommitted work on a hidden saved-work ref,
 * then removed) with a delete's consent, and always for quick-chat expiry, where no one can
 * consent, and for an idle release (nothing is discarded: the next launch restores it);
 * `keep` (left in place and reported) otherwise.
 */
export const dirtyWorkHandling = (trigger: CleanupTrigger, discardChanges: boolean): 'save' | 'keep' =>
  trigger === 'quick_chat_expiry' || trigger === 'idle_release' || (removesTask(trigger) && discardChanges)
    ? 'save'
    : 'keep';

/**
 * A dirty worktree whose work cannot be saved: an idle release keeps it where it is and goes on
 * (`kept_dirty`, reason `save_failed`), giving the task back at once; nothing of a task someone
 * may be about to use waits hours for an operator over a cleanup no one asked for. The other
 * triggers that save (a consented delete, a quick chat's expiry) fail the attempt and retry,
 * as for any failure: they take the task away, so nothing else waits on them.
 */
export const keepsWhenUnsaved = (trigger: CleanupTrigger | undefined): boolean => trigger === 'idle_release';

/**
 * `environment_abandon` (an operator's reset with `abandon: true`) runs no attempt: it releases the
 * environment and marks its inventory `abandoned` in one transaction, touching no file. The
 * trigger is on the job row, so a new run of a job whose run was lost abandons too, never removes.
 */
export const abandonsOnly = (trigger: CleanupTrigger): boolean => trigger === 'environment_abandon';

/** Triggers that archive or remove the task: a task with such a job active is no longer live (it protects no borrowed environment). */
export const takesTaskAway = (trigger: CleanupTrigger): boolean => removesTask(trigger) || trigger === 'archive';

/** Jobs an unarchive cancels (a pending one at once, one in flight once its attempt ends): the archive's own, and its follow-up. */
export const cancelledByUnarchive = (trigger: CleanupTrigger): boolean =>
  trigger === 'archive' || trigger === 'borrow_ended';

/**
 * The members of a cascade that its preparation takes: an archive leaves out the tasks already
 * archived (each had its archive and its job), and says so; other triggers take every member.
 */
export function cascadeMembersToPrepare<M extends { taskId: string }>(
  trigger: CleanupTrigger,
  members: M[],
  archived: ReadonlySet<string>,
): { prepared: M[]; skipped: { taskId: string; reason: 'already_archived' }[] } {
  if (trigger !== 'archive') return { prepared: members, skipped: [] };
  return {
    prepared: members.filter((m) => !archived.has(m.taskId)),
    skipped: members
      .filter((m) => archived.has(m.taskId))
      .map((m) => ({ taskId: m.taskId, reason: 'already_archived' as const })),
  };
}

/** Triggers refused while an agent of the environment runs (they would take its workspace away). */
export const refusedWhileRunning = (trigger: CleanupTrigger): boolean =>
  trigger === 'environment_reset' || trigger === 'environment_abandon' || trigger === 'idle_release';

export interface CancelRequest {
  by?: CancelledBy;
  /** An environment reset: release the environment and abandon its inventory instead of removing anything. */
  abandon?: boolean;
}

/** Classified reasons a cleanup attempt failed: short, stable, never raw command output. */
export type CleanupErrorClass =
  | 'git_worktree_remove_failed'
  | 'git_prune_failed'
  /** Legacy: the single audit refusal of older jobs (rows and histories keep it); new attempts name the reason. */
  | 'worktree_audit_failed'
  | 'worktree_audit_not_directory'
  | 'worktree_audit_unregistered'
  | 'worktree_audit_other_branch'
  | 'worktree_audit_foreign_marker'
  /** The worktree's HEAD (or its branch) moved between the audit's judgement and the removal: something the records do not know writes there. */
  | 'worktree_audit_head_moved'
  | 'worktree_still_registered'
  | 'process_stop_failed'
  | 'branch_cleanup_failed'
  | 'save_uncommitted_failed'
  | 'database_failed'
  | 'host_unavailable'
  /** An SSH target did not answer (a remote clone or agent could not be reached). */
  | 'ssh_target_unavailable'
  /** The target presented another host key than the one pinned: an operator decides. */
  | 'ssh_host_key_mismatch'
  /** A remote task branch's commits could not be brought back to the host repository (diverged, or checked out there): the clone is kept. */
  | 'remote_branch_not_brought_back'
  /** A sandboxed agent's objects could not be brought from its task's store into the repository: nothing is removed until they are. */
  | 'agent_objects_not_home'
  /** The task's container could not be removed (its engine did not answer): the job retries it. */
  | 'container_remove_failed'
  | 'internal';

/**
 * Which failures the retry schedule can fix. An audit refusal is a fact about the folder (it is
 * not a real directory, git does not have it registered, another branch is checked out, the
 * marker names another task or none): waiting does not change it, so the job waits for an
 * operator at once, on that attempt, with the reason in `lastError`. Everything else is
 * transient (git or a lock failing, a host not answering) and keeps the schedule.
 */
export const CLEANUP_ERROR_RECOVERY: Record<CleanupErrorClass, 'retry' | 'operator'> = {
  git_worktree_remove_failed: 'retry',
  git_prune_failed: 'retry',
  worktree_audit_failed: 'operator',
  worktree_audit_not_directory: 'operator',
  worktree_audit_unregistered: 'operator',
  worktree_audit_other_branch: 'operator',
  worktree_audit_foreign_marker: 'operator',
  worktree_audit_head_moved: 'operator',
  worktree_still_registered: 'retry',
  process_stop_failed: 'retry',
  branch_cleanup_failed: 'retry',
  save_uncommitted_failed: 'retry',
  database_failed: 'retry',
  host_unavailable: 'retry',
  ssh_target_unavailable: 'retry',
  ssh_host_key_mismatch: 'operator',
  remote_branch_not_brought_back: 'operator',
  agent_objects_not_home: 'retry',
  container_remove_failed: 'retry',
  internal: 'retry',
};

export const CLEANUP_ERROR_CLASSES = Object.keys(CLEANUP_ERROR_RECOVERY) as CleanupErrorClass[];

export const waitsForOperatorAtOnce = (error: CleanupErrorClass): boolean =>
  CLEANUP_ERROR_RECOVERY[error] === 'operator';

export interface RetryPolicy {
  /** Waits between attempts, in milliseconds; the last one repeats if attempts outnumber it. */
  waitsMs: number[];
  maxAttempts: number;
  /**
   * How long a cleanup's step on another worker may go without a heartbeat before it runs again
   * elsewhere (a worker that died mid-removal): TWS_STEP_HEARTBEAT_TIMEOUT_MS. Absent in inputs
   * from before it existed: the 30 s those ran with.
   */
  heartbeatTimeoutMs?: number;
}

/** A host step's heartbeat timeout unless the operator sets another (TWS_STEP_HEARTBEAT_TIMEOUT_MS). */
export const STEP_HEARTBEAT_TIMEOUT_MS = 30_000;

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
  /** An idle release's cutoff (ISO-8601): its preparation looks again, under the task's lock, whether the task is still idle since. */
  idleCutoff?: string;
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

/** The name of the signal a host's worker sends, once registered again, to the cleanups waiting for it (workflows/cleanup-messages.ts hostBackSignal). */
export const HOST_BACK_SIGNAL = 'hostBack';

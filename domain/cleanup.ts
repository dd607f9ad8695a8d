/**
 * Durable task-owned cleanup [R6], as data: triggers, job states, the snapshot a job carries,
 * and the bounded retry schedule.
 */
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
  /** A clone on this SSH target (its path is the target's): removed over SSH. Absent in older snapshots. */
  sshTargetId?: string | null;
}

export interface SnapshotProcess {
  executionId: string;
  hostId: string;
  pid: number;
  processStartTime: string;
  /** An agent on this SSH target: stopped over SSH. Absent in older snapshots. */
  sshTargetId?: string | null;
  /** Its log on the target, beside which the runner writes its exit status. */
  logPath?: string;
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
  /** SSH targets any agent of the task ran on: a delete removes the task's run folder there (absent in older snapshots). */
  runSshTargetIds?: string[];
  /** Environments left alone (archive) or handed over (delete) because another task's session uses them. */
  borrowed: {
    environmentId: string;
    action: 'kept' | 'handed_over';
    toTaskId: string | null;
    hostId: string;
    taskFolder: string | null;
  }[];
}

export type WorktreeOutcome = 'removed' | 'already_gone' | 'kept_dirty' | 'saved_and_removed' | 'inventory_only';

/** What an abandonment left on disk, known from now on so that nothing removes it (the orphan sweep included). */
export interface AbandonedWorkspace {
  taskFolder: string | null;
  worktrees: { repositoryId: string; worktreePath: string; branch: string | null }[];
}

/** Who ended a job before it finished: an operator (route or CLI), an unarchive, or a message sent without one (the Temporal UI). */
export type CancelledBy = 'operator' | 'unarchive' | 'workflow_message';

export interface CancelRequest {
  by?: CancelledBy;
  /** An environment reset: release the environment and abandon its inventory instead of removing anything. */
  abandon?: boolean;
}

export interface CleanupReport {
  worktrees: {
    repositoryId: string;
    worktreePath: string | null;
    outcome: WorktreeOutcome;
    savedRef?: string;
    savedCommit?: string;
  }[];
  branches: { repositoryId: string; branch: string; outcome: 'kept' | 'deleted_merged' | 'kept_unmerged' }[];
  processesStopped: number;
  borrowed: CleanupSnapshot['borrowed'];
  /** Set when the job was ended before it finished: who, and whether the workspace was abandoned. Absent in older reports. */
  ended?: { action: 'cancel' | 'abandon'; by: CancelledBy };
  /** Paths left on disk by a cancelled delete or an abandonment (absent otherwise). */
  abandoned?: AbandonedWorkspace;
}

export const emptyReport = (): CleanupReport => ({ worktrees: [], branches: [], processesStopped: 0, borrowed: [] });

const DONE_OUTCOMES: WorktreeOutcome[] = ['removed', 'saved_and_removed', 'already_gone'];

/**
 * What the report says of one snapshot row. A repository may have several rows (a transition
 * retains the previous executor's, with its own path: a host worktree and a remote clone), so a
 * row is found by repository AND path (every report entry carries the row's path). A row with
 * no path (inventory-only: a `local` slot) shares its repository's entry.
 */
export function reportedOutcome(
  report: CleanupReport,
  row: Pick<SnapshotWorktree, 'repositoryId' | 'worktreePath'>,
): WorktreeOutcome | undefined {
  const mine = report.worktrees.filter((w) => w.repositoryId === row.repositoryId);
  return (mine.find((w) => w.worktreePath === row.worktreePath) ?? (row.worktreePath === null ? mine[0] : undefined))
    ?.outcome;
}

export const isDoneOutcome = (outcome: WorktreeOutcome | undefined): boolean =>
  outcome !== undefined && DONE_OUTCOMES.includes(outcome);

/** The worktrees of the snapshot an ended job did not remove: what a cancelled delete leaves on disk. */
export function leftoverWorkspace(snapshot: CleanupSnapshot, report: CleanupReport): AbandonedWorkspace {
  const done = (row: SnapshotWorktree) => DONE_OUTCOMES.includes(reportedOutcome(report, row) as WorktreeOutcome);
  return {
    taskFolder: snapshot.taskFolder,
    worktrees: snapshot.worktrees
      .filter((w) => w.worktreePath && !done(w))
      .map((w) => ({ repositoryId: w.repositoryId, worktreePath: w.worktreePath!, branch: w.branch })),
  };
}

/**
 * What an ended job makes of each inventory row of its snapshot: a removed worktree (or an
 * inventory-only slot) is `deleted`; one kept because it was dirty is `kept`; one a cancelled
 * job did not reach is `abandoned`. (The rows of a task that stays keep their state when kept or
 * left: only the rows of a removed task, which the job owns, take the last two.)
 */
export function inventoryOutcomes(
  snapshot: CleanupSnapshot,
  report: CleanupReport,
  state: 'succeeded' | 'cancelled',
): Record<'deleted' | 'kept' | 'abandoned', string[]> {
  const out: Record<'deleted' | 'kept' | 'abandoned', string[]> = { deleted: [], kept: [], abandoned: [] };
  for (const w of snapshot.worktrees) {
    const outcome = reportedOutcome(report, w);
    if (outcome === 'kept_dirty') out.kept.push(w.inventoryRowId);
    else if (outcome !== undefined) out.deleted.push(w.inventoryRowId);
    else if (state === 'cancelled') out.abandoned.push(w.inventoryRowId);
  }
  return out;
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
  /** A sandboxed agent's objects could not be brought from its task's store into the repository (issue 32): nothing is removed until they are. */
  | 'agent_objects_not_home'
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
  internal: 'retry',
};

export const CLEANUP_ERROR_CLASSES = Object.keys(CLEANUP_ERROR_RECOVERY) as CleanupErrorClass[];

export const waitsForOperatorAtOnce = (error: CleanupErrorClass): boolean =>
  CLEANUP_ERROR_RECOVERY[error] === 'operator';

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

/**
 * The host a batch can carry a job out on (a bulk cleanup's batch step runs on one host), or
 * null when the job needs more than one place: an agent, an unrecorded start or a borrowed
 * environment on another host, or a clone on an SSH target. Those jobs get a run of their own.
 */
export function batchHostOf(snapshot: CleanupSnapshot): string | null {
  const host = snapshot.hostId;
  if (!host) return null;
  if (snapshot.worktrees.some((w) => w.sshTargetId)) return null;
  if (snapshot.processes.some((p) => p.hostId !== host || p.sshTargetId)) return null;
  if ((snapshot.spawnIntents ?? []).some((i) => i.hostId !== host)) return null;
  if (snapshot.borrowed.some((b) => b.hostId !== host)) return null;
  return host;
}

/** A job that ended: nothing more happens to it. */
export const isTerminalJobState = (state: CleanupJobState): boolean => state === 'succeeded' || state === 'cancelled';

/** The hosts an attempt of this snapshot works on, in its order: those that only stop agents first, the workspace's host last. */
export function cleanupHosts(snapshot: CleanupSnapshot): string[] {
  const others = [
    ...new Set([
      ...snapshot.processes.map((p) => p.hostId),
      ...(snapshot.spawnIntents ?? []).map((i) => i.hostId),
      ...snapshot.borrowed.map((b) => b.hostId),
    ]),
  ].filter((h) => h !== snapshot.hostId);
  return [...others, ...(snapshot.hostId ? [snapshot.hostId] : [])];
}

/** The name of the signal a host's worker sends, once registered again, to the cleanups waiting for it (workflows/cleanup-messages.ts hostBackSignal). */
export const HOST_BACK_SIGNAL = 'hostBack';

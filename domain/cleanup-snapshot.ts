/**
 * What a cleanup job accounts for and what it says it did [R6], as data: the snapshot of the
 * worktrees, agents and borrowed environments it carries, its report and the outcome of each
 * worktree, and the hosts an attempt of it works on.
 */
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

export interface CleanupReport {
  worktrees: {
    repositoryId: string;
    worktreePath: string | null;
    outcome: WorktreeOutcome;
    savedRef?: string;
    savedCommit?: string;
    /** Why a dirty worktree was kept when its trigger saves: its work could not be saved (an idle release). */
    reason?: 'save_failed';
    /** Ignored paths its save left out as rebuilt (dependencies, build output). */
    leftOut?: { path: string; reason: 'rebuildable' }[];
  }[];
  branches: { repositoryId: string; branch: string; outcome: 'kept' | 'deleted_merged' | 'kept_unmerged' }[];
  processesStopped: number;
  /** The task's container (the `container` executor's), removed with its agents stopped. Absent: none was recorded. */
  container?: 'removed';
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

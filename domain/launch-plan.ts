/** Building the slots of a launch plan from the task's repositories and the recorded inventory. Pure. */
import type { ExecutorType } from './admission';
import type { LaunchPlan, SlotPlan } from './launch';
import type { SessionRoleName } from './session';
import { generationBranch, isSlugBranch, joinPath } from './task-layout';

export interface RepositorySlot {
  repositoryId: string;
  repositoryName: string;
  repositoryPath: string;
  /** The registered repository's identity (git/repository-check.ts); null when never recorded. */
  repositoryRootCommit?: string | null;
  position: number;
  baseBranch: string;
  checkoutBranch: string | null;
  branchSlug: string;
}

export interface RecordedRow {
  repositoryId: string;
  branchSlug: string;
  worktreeId: string | null;
  worktreePath: string | null;
  worktreeBranch: string | null;
}

/**
 * Slots a materializer creates: a worktree per repository in the environment's task folder (the
 * owner's folder of its layout generation, or the folder it recorded: a handed-over environment
 * keeps the folder its worktrees, kept dirty ones included, are in), or the source checkout for
 * `local`. A requested existing branch is checked out as it is.
 */
export function materializeSlots(
  repos: RepositorySlot[],
  executor: ExecutorType,
  folder: string,
  generation = 0,
): SlotPlan[] {
  return repos.map((r) => {
    // A branch a hand-over recorded is the service's own for the slug: made (or found) per
    // generation like any task branch, so that after an abandonment the new generation gets a new
    // one instead of the branch the abandoned folder still has checked out.
    const taskBranch = r.checkoutBranch === null || isSlugBranch(r.checkoutBranch, r.branchSlug);
    const branch = taskBranch ? generationBranch(r.branchSlug, generation) : r.checkoutBranch!;
    return {
      ...repositoryOf(r),
      branch,
      // The recorded branch itself (a hand-over's, in its generation) is checked out as it is, as before.
      createBranch: branch !== r.checkoutBranch,
      worktreePath: executor === 'local' ? r.repositoryPath : joinPath(folder, r.repositoryName),
      recorded: null,
    };
  });
}

/** What a slot takes from its repository, whatever the launch does with it. */
const repositoryOf = (r: RepositorySlot) => ({
  repositoryId: r.repositoryId,
  repositoryName: r.repositoryName,
  sourcePath: r.repositoryPath,
  sourceRootCommit: r.repositoryRootCommit ?? null,
  baseBranch: r.baseBranch,
  branchSlug: r.branchSlug,
  position: r.position,
});

/** The agent's working directory [R2.2]: the source checkout (`local`), the one worktree, or the task folder that holds several. */
export function materializedWorkspacePath(slots: SlotPlan[], executor: ExecutorType, folder: string): string {
  if (executor === 'local') return slots[0]!.sourcePath;
  return slots.length === 1 ? slots[0]!.worktreePath : folder;
}

/** Slots an attach validates: exactly what the inventory records for each of the environment's slots. */
export function attachSlots(repos: RepositorySlot[], rows: RecordedRow[]): SlotPlan[] {
  return repos.map((r) => {
    const row = rows.find((x) => x.repositoryId === r.repositoryId && x.branchSlug === r.branchSlug);
    return {
      ...repositoryOf(r),
      branch: row?.worktreeBranch ?? r.checkoutBranch ?? r.branchSlug,
      createBranch: false,
      worktreePath: row?.worktreePath ?? r.repositoryPath,
      recorded: row
        ? { worktreeId: row.worktreeId, worktreePath: row.worktreePath, worktreeBranch: row.worktreeBranch }
        : null,
    };
  });
}

/** What a plan does with its workspace, decided once from its role and executor and carried by the plan. */
export interface WorkspaceSteps {
  /** Read-only validation of the workspace before the agent starts (attach; a `local` target, the source checkout). */
  validate: boolean;
  /** Worktrees to create (a first `worktree` workspace, or a transition to `worktree`); clones on the target for `ssh`. */
  createWorktrees: boolean;
  /** The workspace is on an SSH target: every step on it goes over SSH, never through the host's git. */
  remote?: boolean;
}

export function decideWorkspaceSteps(role: SessionRoleName, executor: ExecutorType): WorkspaceSteps {
  const remote = executor === 'ssh';
  if (role === 'attached') return { validate: true, createWorktrees: false, remote };
  return executor === 'local'
    ? { validate: true, createWorktrees: false, remote }
    : { validate: false, createWorktrees: true, remote };
}

/** The plan's own decision; plans admitted before it carried one decide the same from their role and executor. */
export const workspaceStepsOf = (plan: Pick<LaunchPlan, 'role' | 'executorType' | 'workspace'>): WorkspaceSteps =>
  plan.workspace ?? decideWorkspaceSteps(plan.role, plan.executorType);

/** `local` runs in the source checkout itself: one checkout, one working directory. */
export const executorFitsSlots = (executor: ExecutorType, slotCount: number): boolean =>
  executor !== 'local' || slotCount === 1;

/** The executor a plan runs on: the one it was admitted with. */
export const executorOfPlan = (plan: Pick<LaunchPlan, 'executorType'>): ExecutorType => plan.executorType;

/**
 * The executor that holds a record (an execution, an inventory row, a snapshot's entry): records
 * name the place they are on, not the executor that made them. One on an SSH target is the `ssh`
 * executor's; anything on a host is the `worktree` executor's, whose host operations `local`
 * shares (a local checkout's row has no worktree to remove: `inventory_only`). An agent's start
 * that names `container` is the container executor's (its agent runs in the task's container; its
 * stop, as every host agent's, is the host's).
 */
export const executorOfRecord = (record: { sshTargetId?: string | null; executorType?: ExecutorType }): ExecutorType =>
  record.sshTargetId ? 'ssh' : record.executorType === 'container' ? 'container' : 'worktree';

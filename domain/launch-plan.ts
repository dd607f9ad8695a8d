/** Building the slots of a launch plan from the task's repositories and the recorded inventory. Pure. */
import type { ExecutorType } from './admission';
import type { SlotPlan } from './launch';
import { environmentWorkspacePath, generationBranch, worktreePath } from './task-layout';

export interface RepositorySlot {
  repositoryId: string;
  repositoryName: string;
  repositoryPath: string;
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
 * Slots a materializer creates: a worktree per repository under the owner's task folder of the
 * environment's layout generation (a new folder and a new task branch after an abandonment), or
 * the source checkout for `local`. A requested existing branch is checked out as it is.
 */
export function materializeSlots(repos: RepositorySlot[], executor: ExecutorType, workspaceRoot: string, ownerTaskId: string, generation = 0): SlotPlan[] {
  return repos.map((r) => ({
    repositoryId: r.repositoryId,
    repositoryName: r.repositoryName,
    sourcePath: r.repositoryPath,
    baseBranch: r.baseBranch,
    branch: r.checkoutBranch ?? generationBranch(r.branchSlug, generation),
    branchSlug: r.branchSlug,
    createBranch: r.checkoutBranch === null,
    worktreePath: executor === 'local' ? r.repositoryPath : worktreePath(workspaceRoot, ownerTaskId, r.repositoryName, generation),
    position: r.position,
    recorded: null,
  }));
}

export function materializedWorkspacePath(slots: SlotPlan[], executor: ExecutorType, workspaceRoot: string, ownerTaskId: string, generation = 0): string {
  return executor === 'local' ? slots[0]!.sourcePath : environmentWorkspacePath(workspaceRoot, ownerTaskId, slots, generation);
}

/** Slots an attach validates: exactly what the inventory records for each of the environment's slots. */
export function attachSlots(repos: RepositorySlot[], rows: RecordedRow[]): SlotPlan[] {
  return repos.map((r) => {
    const row = rows.find((x) => x.repositoryId === r.repositoryId && x.branchSlug === r.branchSlug);
    return {
      repositoryId: r.repositoryId,
      repositoryName: r.repositoryName,
      sourcePath: r.repositoryPath,
      baseBranch: r.baseBranch,
      branch: row?.worktreeBranch ?? r.checkoutBranch ?? r.branchSlug,
      branchSlug: r.branchSlug,
      createBranch: false,
      worktreePath: row?.worktreePath ?? r.repositoryPath,
      position: r.position,
      recorded: row ? { worktreeId: row.worktreeId, worktreePath: row.worktreePath, worktreeBranch: row.worktreeBranch } : null,
    };
  });
}

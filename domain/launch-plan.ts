/** Building the slots of a launch plan from the task's repositories and the recorded inventory. Pure. */
import type { ExecutorType } from './admission';
import type { SlotPlan } from './launch';
import { environmentWorkspacePath, worktreePath } from './task-layout';

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

/** Slots a materializer creates: a worktree per repository under the owner's task folder, or the source checkout for `local`. */
export function materializeSlots(repos: RepositorySlot[], executor: ExecutorType, workspaceRoot: string, ownerTaskId: string): SlotPlan[] {
  return repos.map((r) => ({
    repositoryId: r.repositoryId,
    repositoryName: r.repositoryName,
    sourcePath: r.repositoryPath,
    baseBranch: r.baseBranch,
    branch: r.checkoutBranch ?? r.branchSlug,
    branchSlug: r.branchSlug,
    createBranch: r.checkoutBranch === null,
    worktreePath: executor === 'local' ? r.repositoryPath : worktreePath(workspaceRoot, ownerTaskId, r.repositoryName),
    position: r.position,
    recorded: null,
  }));
}

export function materializedWorkspacePath(slots: SlotPlan[], executor: ExecutorType, workspaceRoot: string, ownerTaskId: string): string {
  return executor === 'local' ? slots[0]!.sourcePath : environmentWorkspacePath(workspaceRoot, ownerTaskId, slots);
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

/**
 * Where a task's workspace lives and what its branches are called. One repository: the agent
 * works in the worktree; several: in the task folder that holds one worktree per repository.
 */
export const OWNERSHIP_MARKER_FILE = '.task-workspace.json';

export const taskDirName = (taskId: string): string => `task-${taskId}`;

/** The branch a task works on when the caller did not ask for an existing one. */
export const taskBranchName = (taskId: string): string => `tws/${taskId}`;

export function joinPath(...parts: string[]): string {
  return parts
    .map((part, i) => (i === 0 ? part.replace(/\/+$/, '') : part.replace(/^\/+|\/+$/g, '')))
    .filter((part, i) => i === 0 || part.length > 0)
    .join('/');
}

export interface SlotLayout {
  repositoryId: string;
  repositoryName: string;
  worktreePath: string;
  branch: string;
}

export function taskFolder(workspaceRoot: string, taskId: string): string {
  return joinPath(workspaceRoot, taskDirName(taskId));
}

export function worktreePath(workspaceRoot: string, taskId: string, repositoryName: string): string {
  return joinPath(taskFolder(workspaceRoot, taskId), repositoryName);
}

/** The agent's working directory for an environment [R2.2]. */
export function environmentWorkspacePath(workspaceRoot: string, taskId: string, slots: Pick<SlotLayout, 'worktreePath'>[]): string {
  return slots.length === 1 ? slots[0]!.worktreePath : taskFolder(workspaceRoot, taskId);
}

export interface OwnershipMarker {
  kind: 'task-workspaces/ownership';
  taskId: string;
  environmentId: string;
}

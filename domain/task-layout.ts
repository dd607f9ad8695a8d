/**
 * Where a task's workspace lives and what its branches are called. One repository: the agent
 * works in the worktree; several: in the task folder that holds one worktree per repository.
 */
import type { AgentSandboxMode } from './sandbox';

export const OWNERSHIP_MARKER_FILE = '.task-workspace.json';

/**
 * The layout generation of an environment: 0 for its first folder and branch; each operator
 * abandonment moves it on by one (task_environments.layout_generation). The next materialization
 * then works in `task-<id>-r<n>` on a new task branch `tws/<id>/work-r<n>` created from the base:
 * the abandoned folder and its branch stay exactly as they are, and nothing collides with them
 * (a create-only ref update refuses an existing branch; an occupied path is refused too).
 */
const generationSuffix = (generation: number): string => (generation > 0 ? `-r${generation}` : '');

export const taskDirName = (taskId: string, generation = 0): string => `task-${taskId}${generationSuffix(generation)}`;

/**
 * The branch a task works on when the caller did not ask for an existing one: in the
 * task's own ref folder `refs/heads/tws/<id>/`, the one folder of refs its sandboxed agent may
 * write. Tasks created before kept their flat `tws/<id>` (still theirs for cleanup; see
 * `taskRefFolder`).
 */
export const taskBranchName = (taskId: string): string => `tws/${taskId}/work`;

/** The branch a slot creates in a layout generation: its slug, suffixed after an abandonment. */
export const generationBranch = (branchSlug: string, generation: number): string =>
  `${branchSlug}${generationSuffix(generation)}`;

const isGenerationOf = (branch: string, base: string): boolean =>
  branch === base || (branch.startsWith(`${base}-r`) && /^[1-9][0-9]*$/.test(branch.slice(base.length + 2)));

/**
 * Whether a slot's recorded branch is the one the service made for its slug, in any layout
 * generation (not a branch the user asked to check out): a hand-over records it as the new
 * owner's branch, and an abandonment after that must move on to a new one, never check it out again.
 */
export const isSlugBranch = (branch: string, slug: string): boolean =>
  /^tws\/[^/]+(\/work)?$/.test(slug) && isGenerationOf(branch, slug);

/** A branch the task's materializations created (of any generation, either naming): delete may remove it when merged. */
export function isTaskBranch(branch: string | null, taskId: string): boolean {
  return branch !== null && (isGenerationOf(branch, taskBranchName(taskId)) || isGenerationOf(branch, `tws/${taskId}`));
}

/**
 * The ref folder (relative to the common git dir) a sandboxed agent may write for a slot's branch:
 * that of the task whose service-made branch it is (`refs/heads/tws/<task>`), whichever task now
 * uses the workspace (a hand-over keeps the branch). Null for any other branch (an existing one
 * the task checked out, a flat branch of an older task): the agent then reads it and cannot move it.
 */
export function taskRefFolder(branch: string): string | null {
  const m = /^tws\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/work(?:-r[1-9][0-9]*)?$/.exec(
    branch,
  );
  return m ? `refs/heads/tws/${m[1]}` : null;
}

/**
 * Whether an agent of this executor can commit on an existing branch its task asked to check out
 * (`checkoutBranch`: outside any task's ref folder). `worktree` agents are held to their task's
 * folder by the sandbox (unless TWS_AGENT_SANDBOX=none), `container` agents always (their binds are
 * the sandbox's); `ssh` agents run as the target's user in clones of their own, and `local` works
 * in the source checkout, not on the asked branch.
 */
export function agentCommitsOnCheckoutBranch(executorType: string, sandbox: AgentSandboxMode): boolean {
  if (executorType === 'container') return false;
  if (executorType === 'worktree') return sandbox === 'none';
  return true;
}

/** A slot's branch the task's creator asked for (`checkoutBranch`), not one a hand-over recorded as its slug's. */
export const askedCheckoutBranch = (slot: { checkout_branch: string | null; branch_slug: string }): boolean =>
  slot.checkout_branch !== null && !isSlugBranch(slot.checkout_branch, slot.branch_slug);

/** Whether an absolute, normalized path is the folder itself or inside it. */
export function isWithinFolder(p: string, folder: string): boolean {
  const root = folder.length > 1 ? folder.replace(/\/+$/, '') : folder;
  return p === root || p.startsWith(root === '/' ? '/' : `${root}/`);
}

export function joinPath(...parts: string[]): string {
  return parts
    .map((part, i) => (i === 0 ? part.replace(/\/+$/, '') : part.replace(/^\/+|\/+$/g, '')))
    .filter((part, i) => i === 0 || part.length > 0)
    .join('/');
}

/** The task folder a clone or a worktree is in (its marker's): either is `<task folder>/<repository name>`. */
export const taskFolderOf = (repoPath: string): string => repoPath.replace(/\/+$/, '').replace(/\/[^/]*$/, '') || '/';

export function taskFolder(workspaceRoot: string, taskId: string, generation = 0): string {
  return joinPath(workspaceRoot, taskDirName(taskId, generation));
}

export function worktreePath(workspaceRoot: string, taskId: string, repositoryName: string, generation = 0): string {
  return joinPath(taskFolder(workspaceRoot, taskId, generation), repositoryName);
}

export interface OwnershipMarker {
  kind: 'task-workspaces/ownership';
  taskId: string;
  environmentId: string;
}

/** The marker file's text, the same on a host and on an SSH target (compared byte for byte there). */
export const ownershipMarkerText = (taskId: string, environmentId: string): string =>
  JSON.stringify({ kind: 'task-workspaces/ownership', taskId, environmentId } satisfies OwnershipMarker, null, 2) +
  '\n';

/** A marker's text read back: the marker, or null for anything that is not one (unreadable text is no marker). */
export function parseOwnershipMarker(text: string | null): OwnershipMarker | null {
  if (text === null) return null;
  try {
    const parsed = JSON.parse(text) as OwnershipMarker;
    return parsed?.kind === 'task-workspaces/ownership' ? parsed : null;
  } catch {
    return null;
  }
}

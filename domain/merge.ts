/**
 * Finishing a task [R8], as data: the strategies, what a merge plans per repository, what its
 * preview answers and what it records. The git of it is git/merge-*.ts; the orchestration
 * workflows/merge-task.ts; the records db/git-operations.ts.
 */
export const MERGE_STRATEGIES = ['squash', 'merge', 'fast_forward', 'rebase'] as const;
export type MergeStrategy = (typeof MERGE_STRATEGIES)[number];

/** Whether a repository's `mergeStrategies` (null: every strategy) allows this one. */
export const strategyAllowed = (allowed: readonly string[] | null, strategy: MergeStrategy): boolean =>
  allowed === null || allowed.includes(strategy);

/** Why a preview cannot say clean now (api.md `blockedBy`). */
type MergeBlock = 'uncommitted_changes' | 'session_running' | 'base_checkout_dirty' | 'not_fast_forward';

export type PreviewOutcome =
  | { outcome: 'clean' }
  | { outcome: 'up_to_date' }
  | { outcome: 'conflicts'; conflicts: string[] }
  | { outcome: 'blocked'; blockedBy: MergeBlock };

/**
 * One repository of a task, as the records know it: where its source is, its base, the task
 * branch (kept after a release), and the task's workspace for it when one is active.
 */
export interface TaskRepositorySource {
  repositoryId: string;
  hostId: string;
  sourcePath: string;
  baseBranch: string;
  /** The task's branch (null: none recorded, as for a `local` task, whose work is the checkout's branch). */
  taskBranch: string | null;
  /** The task's worktree or clone for it, when one is active (its uncommitted work is judged there). */
  worktreePath: string | null;
  executorType: string | null;
  sshTargetId: string | null;
  environmentId: string | null;
  remote: string | null;
  mergeStrategies: string[] | null;
}

/** What a merge will do in one repository: computed before any ref moves and recorded. */
export interface RepositoryPlan {
  repositoryId: string;
  hostId: string;
  sourcePath: string;
  baseBranch: string;
  /** The base's commit the plan was made on: the base moves only from this one (compare-and-set). */
  before: string;
  /** The task branch's commit the plan took. */
  taskHead: string;
  /** The commit the base moves to (made, not yet reachable from any ref, or the task head itself). */
  after: string;
}

/** What each repository's base did, as the merge resource says it. */
export interface RepositoryMerged {
  repositoryId: string;
  baseBranch: string;
  before: string | null;
  after: string | null;
  /** Asked to push (`push: true`): whether the base reached its repository's remote (false: no remote, or it refused). */
  pushed?: boolean;
}

export type GitOperationState = 'running' | 'merged' | 'refused' | 'undone' | 'needs_operator' | 'done';

/** The identity of the commits the product makes (TWS_GIT_AUTHOR, `Name <email>`). */
export interface GitIdentity {
  name: string;
  email: string;
}

export const DEFAULT_GIT_IDENTITY: GitIdentity = { name: 'task-workspaces', email: 'task-workspaces@localhost' };

/** `Name <email>` as TWS_GIT_AUTHOR gives it; null when it is not that shape. */
export function parseGitIdentity(text: string): GitIdentity | null {
  const m = /^([^<>\n]+?)\s*<([^<>\s]+@[^<>\s]+)>$/.exec(text.trim());
  return m ? { name: m[1]!, email: m[2]! } : null;
}

/** The message of a commit the product makes: the request's, else the task's title, with the task's trailer. */
export function mergeMessage(message: string | undefined, title: string, taskId: string): string {
  const body = (message?.trim() || title.trim() || `Task ${taskId}`).replace(/\r/g, '');
  return `${body}\n\nTask-Id: ${taskId}\n`;
}

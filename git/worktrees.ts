/**
 * A repository's registered worktrees: listed, added, removed, pruned and identified, the
 * commands materialize and cleanup change the repository with.
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { gitAt, run, type GitOptions } from './git';

export interface WorktreeEntry {
  path: string;
  head: string | null;
  branch: string | null; // short name, null when detached
  bare: boolean;
  prunable: boolean;
  locked: boolean;
}

export function parseWorktreeList(porcelain: string): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | null = null;
  for (const line of porcelain.split('\n')) {
    if (line.startsWith('worktree ')) {
      current = {
        path: line.slice('worktree '.length),
        head: null,
        branch: null,
        bare: false,
        prunable: false,
        locked: false,
      };
      entries.push(current);
    } else if (!current) {
      continue;
    } else if (line.startsWith('HEAD ')) {
      current.head = line.slice(5);
    } else if (line.startsWith('branch ')) {
      current.branch = line.slice(7).replace(/^refs\/heads\//, '');
    } else if (line === 'bare') {
      current.bare = true;
    } else if (line.startsWith('prunable')) {
      current.prunable = true;
    } else if (line.startsWith('locked')) {
      current.locked = true;
    }
  }
  return entries;
}

/**
 * The registered worktrees. git never calls a locked one prunable (the service locks its own:
 * below), so its rule is applied here to those: a registration whose worktree has no `.git` any
 * more (the folder gone, or replaced by one that is no worktree) is prunable. A `.git` that cannot
 * be read for another reason is thrown: never a guess either way.
 */
export async function listWorktrees(git: SimpleGit): Promise<WorktreeEntry[]> {
  const entries = parseWorktreeList(await run(git, ['worktree', 'list', '--porcelain']));
  await Promise.all(
    entries.map(async (entry, i) => {
      if (i === 0 || entry.bare || !entry.locked || entry.prunable) return;
      entry.prunable = await lstat(path.join(entry.path, '.git')).then(
        () => false,
        (err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return true;
          throw err;
        },
      );
    }),
  );
  return entries;
}

/**
 * Why the service's worktrees are locked (`git worktree lock`): a task's worktree belongs to its
 * agent's uid and is closed to others, so the repository owner's git cannot see it and would take
 * it for gone; their `git worktree prune` would then drop its registration under a live task
 * [R9.1]. Locked, it is never pruned; the service unlocks it only to remove it.
 */
export const WORKTREE_LOCK_REASON = 'a task-workspaces task works here; the service removes it';

/**
 * Adds a worktree, locked (above). With createFrom, the branch is created there and git refuses if
 * it already exists (a create-only ref update: an existing branch is never moved).
 */
export async function addWorktree(
  git: SimpleGit,
  worktreePath: string,
  branch: string,
  createFrom: string | null,
): Promise<void> {
  const args = createFrom
    ? [
        'worktree',
        'add',
        '--lock',
        '--reason',
        WORKTREE_LOCK_REASON,
        '--no-track',
        '-b',
        branch,
        worktreePath,
        createFrom,
      ]
    : ['worktree', 'add', '--lock', '--reason', WORKTREE_LOCK_REASON, worktreePath, branch];
  await run(git, args);
}

/**
 * Removes a worktree: unlocked first (`locked`: as its listing says; unknown: tried, and a refusal
 * because it was not locked is no failure, the removal decides), locked again when git keeps it.
 */
export async function removeWorktree(
  git: SimpleGit,
  worktreePath: string,
  force: boolean,
  locked = true,
): Promise<void> {
  if (locked) await run(git, ['worktree', 'unlock', worktreePath]).catch(() => undefined);
  try {
    await run(git, ['worktree', 'remove', ...(force ? ['--force'] : []), worktreePath]);
  } catch (err) {
    if (locked)
      await run(git, ['worktree', 'lock', '--reason', WORKTREE_LOCK_REASON, worktreePath]).catch(() => undefined);
    throw err;
  }
}

/** Drops the registrations whose worktree is gone: a locked one (the service's) unlocked first, as git prunes no locked one. */
export async function pruneWorktrees(git: SimpleGit): Promise<void> {
  for (const entry of await listWorktrees(git))
    if (entry.prunable && entry.locked) await run(git, ['worktree', 'unlock', entry.path]);
  await run(git, ['worktree', 'prune']);
}

/**
 * A worktree's administrative id (its folder under <common>/worktrees) and its HEAD commit, read
 * by one git process; null when unreadable (git's error, if it failed, goes to `onError`).
 */
export async function worktreeIdentity(
  worktreeDir: string,
  options: GitOptions,
  onError: (err: unknown) => void = () => {},
): Promise<{ id: string; head: string } | null> {
  try {
    const [gitDir, head] = (await run(gitAt(worktreeDir, options), ['rev-parse', '--absolute-git-dir', 'HEAD']))
      .trim()
      .split('\n');
    const match = /\/worktrees\/([^/]+)$/.exec(gitDir ?? '');
    return match && head && /^[0-9a-f]{40,64}$/.test(head) ? { id: match[1]!, head } : null;
  } catch (err) {
    onError(err);
    return null;
  }
}

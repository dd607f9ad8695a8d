/**
 * Saving a worktree's uncommitted work on a hidden ref before it is removed, and putting it back
 * into a new worktree [R6.9, R6.10]. A save is one commit (git's `stash create` over the index of
 * everything: modified, added, deleted and untracked files; ignored ones are not saved) whose
 * first parent is the HEAD it was made on. A restore applies exactly the difference between the
 * two, in one `git apply` that changes everything or nothing: never a half-applied worktree.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { gitAt, type GitOptions } from './git';

/**
 * Saves what is uncommitted in `dir` on the ref `refFor(commit)` names (the commit is known
 * only once it is made, so a ref may be named after it); null when there is nothing to save.
 */
export async function saveWorkOnRef(
  dir: string,
  refFor: (commit: string) => string,
  message: string,
  options: GitOptions,
): Promise<{ ref: string; commit: string } | null> {
  const git = gitAt(dir, options);
  await git.raw(['add', '--all']); // the index of a worktree about to be removed, so untracked files are included
  const commit = (await git.raw(['stash', 'create', message])).trim();
  if (!commit) return null;
  const ref = refFor(commit);
  await git.raw(['update-ref', '-m', message, ref, commit]);
  return { ref, commit };
}

/**
 * Writes the work of a saved commit as a binary patch to `file` (by git itself, bytes as they
 * are: a file in another encoding survives): exactly the difference between the save and the
 * HEAD it was made on. `git` is any checkout that has the commit (the worktree, or the host
 * repository for a remote clone).
 */
async function writeSavedWorkPatch(git: SimpleGit, commit: string, file: string): Promise<void> {
  await git.raw([
    'diff',
    '--binary',
    '--full-index',
    '--no-color',
    '--no-ext-diff',
    '--no-textconv',
    `--output=${file}`,
    `${commit}^1`,
    commit,
  ]);
}

/** `use` gets a file of a private folder (mkdtemp: 0700) that is removed once it is done. */
async function withPatchFile<T>(use: (file: string) => Promise<T>): Promise<T> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tws-restore-'));
  try {
    return await use(path.join(folder, 'work.patch'));
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** The saved commit's work as a binary patch, read from the repository at `repoDir` (for a clone elsewhere to apply). */
export async function savedWorkPatch(repoDir: string, commit: string, options: GitOptions): Promise<Buffer> {
  const git = gitAt(repoDir, options);
  return withPatchFile(async (file) => {
    await writeSavedWorkPatch(git, commit, file);
    return readFile(file);
  });
}

/**
 * Puts a saved commit's work back into the worktree at `dir`: `applied` (also when it holds
 * nothing), or `conflict` when it does not apply to the worktree as it is (the branch moved
 * since the save): then nothing was changed, and the saved ref is there to apply by hand.
 */
export async function restoreSavedWork(
  dir: string,
  commit: string,
  options: GitOptions,
): Promise<'applied' | 'conflict'> {
  const git = gitAt(dir, options);
  return withPatchFile(async (file) => {
    await writeSavedWorkPatch(git, commit, file);
    if ((await stat(file)).size === 0) return 'applied';
    if (!(await applies(git, ['--check', file]))) {
      // A retried restore whose first run applied (and then lost its record) finds its work in place.
      return (await applies(git, ['--check', '--reverse', file])) ? 'applied' : 'conflict';
    }
    await git.raw(['apply', file]);
    return 'applied';
  });
}

async function applies(git: SimpleGit, args: string[]): Promise<boolean> {
  try {
    await git.raw(['apply', ...args]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Saving a worktree's uncommitted work on a hidden ref before it is removed, and putting it back
 * into a new worktree [R6.9, R6.10]. A save is one commit (git's `stash create` over the index of
 * everything: modified, added, deleted and untracked files; ignored ones are not saved) whose
 * first parent is the HEAD it was made on. A restore applies exactly the difference between the
 * two, in one `git apply` that changes everything or nothing: never a half-applied worktree.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
  // Written by git itself (bytes as they are: a file in another encoding survives), to a file of a
  // private folder (mkdtemp: 0700), removed at once.
  const folder = await mkdtemp(path.join(tmpdir(), 'tws-restore-'));
  try {
    const file = path.join(folder, 'work.patch');
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
    if ((await stat(file)).size === 0) return 'applied';
    if (!(await applies(git, ['--check', file]))) {
      // A retried restore whose first run applied (and then lost its record) finds its work in place.
      return (await applies(git, ['--check', '--reverse', file])) ? 'applied' : 'conflict';
    }
    await git.raw(['apply', file]);
    return 'applied';
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

async function applies(git: ReturnType<typeof gitAt>, args: string[]): Promise<boolean> {
  try {
    await git.raw(['apply', ...args]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Saving a worktree's uncommitted work on a hidden ref before it is removed, and putting it back
 * into a new worktree [R6.9, R6.10]. A save is one commit (git's `stash create` over the index of
 * everything: modified, added, deleted and untracked files; ignored ones are not saved) whose
 * first parent is the HEAD it was made on. A restore applies exactly the difference between the
 * two, in one `git apply` that changes everything or nothing (a write that fails part-way is
 * undone path by path): never a half-applied worktree.
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
    try {
      await git.raw(['apply', file]);
    } catch (err) {
      // The patch fits (checked above), so git failed writing it (a disk that filled): what it
      // wrote is put back as HEAD has it, and the caller is told. The saved ref keeps the work.
      await undoApply(git, commit);
      throw err;
    }
    return 'applied';
  });
}

/**
 * Puts every path the saved commit touches back as HEAD has it, and removes those HEAD does not
 * have: after a failed apply into a new worktree, it is the checkout it was. Only those paths
 * are touched.
 */
async function undoApply(git: SimpleGit, commit: string): Promise<void> {
  const touched = (await git.raw(['diff', '--name-only', '-z', '--no-renames', `${commit}^1`, commit]))
    .split('\0')
    .filter(Boolean);
  if (touched.length === 0) return;
  const root = (await git.raw(['rev-parse', '--show-toplevel'])).trim();
  const inHead = new Set(
    (await git.raw(['ls-tree', '-r', '-z', '--name-only', '--full-tree', 'HEAD'])).split('\0').filter(Boolean),
  );
  const kept = touched.filter((p) => inHead.has(p));
  for (let i = 0; i < kept.length; i += 500)
    await git.raw(['checkout', 'HEAD', '--', ...kept.slice(i, i + 500).map((p) => `:(top,literal)${p}`)]);
  for (const p of touched.filter((p) => !inHead.has(p))) await rm(path.join(root, p), { force: true });
}

async function applies(git: SimpleGit, args: string[]): Promise<boolean> {
  try {
    await git.raw(['apply', ...args]);
    return true;
  } catch {
    return false;
  }
}

/**
 * A base branch checked out in a folder (the source checkout, another worktree) moves with its
 * files [R8.3]: brought forward there as `git merge --ff-only` would, keeping that folder's
 * uncommitted files that the merge does not touch. Where they overlap, the merge is refused
 * before anything moves: no folder is left with files that disagree with its branch.
 */
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { gitAt, run } from './git';
import { gitEnvironment } from './git-environment';
import { listWorktrees } from './worktrees';
import { fileStatus } from './worktree-status';

const execFileAsync = promisify(execFile);

/** The folders where `branch` is checked out (the source checkout first when it is one of them). */
async function baseCheckouts(repoPath: string, branch: string, binary: string): Promise<string[]> {
  const entries = await listWorktrees(gitAt(repoPath, { binary }));
  return entries.filter((e) => !e.bare && !e.prunable && e.branch === branch).map((e) => e.path);
}

/** The paths that differ between two commits (both sides of a rename). */
export async function changedPaths(repoPath: string, from: string, to: string, binary: string): Promise<Set<string>> {
  const out = await run(gitAt(repoPath, { binary }), ['diff', '--name-only', '-z', '--no-renames', from, to, '--']);
  return new Set(out.split('\0').filter((p) => p.length > 0));
}

/**
 * The folders with the base checked out, or null where one of them has uncommitted files among
 * `changed` (a folder git cannot read counts as overlapping).
 */
export async function clearCheckouts(
  repoPath: string,
  branch: string,
  changed: Set<string>,
  binary: string,
): Promise<string[] | null> {
  const folders = await baseCheckouts(repoPath, branch, binary);
  for (const folder of folders) {
    const files = await fileStatus(folder, { binary }).catch(() => null);
    if (!files) return null;
    if (files.some((f) => changed.has(f.path) || [...changed].some((c) => c.startsWith(`${f.path}/`)))) return null;
  }
  return folders;
}

/**
 * Each folder with the base checked out, its index and files taken from `from` to `to` by git's
 * two-tree merge (`read-tree -m -u`, its index refreshed first as `git merge` does), which keeps
 * local changes to untouched files and refuses to overwrite a changed one. Run as the folder's
 * owner, so every file it writes stays theirs. A folder already at `to` (a step run again) is left
 * as it is: the two-tree merge finds it so.
 */
export async function bringCheckoutsForward(
  repoPath: string,
  branch: string,
  from: string,
  to: string,
  binary: string,
  /** The folders as a check under the same hold of the lock found them. */
  folders?: string[],
): Promise<void> {
  for (const folder of folders ?? (await baseCheckouts(repoPath, branch, binary)))
    await moveFolder(folder, from, to, binary);
}

/** One folder's index and files from one commit's tree to another's, as its owner (a rebased task worktree too). */
export async function moveFolder(folder: string, from: string, to: string, binary: string): Promise<void> {
  const owner = await stat(folder);
  const asOwner = process.getuid?.() === 0 && owner.uid !== 0 ? { uid: owner.uid, gid: owner.gid } : {};
  const options = {
    cwd: folder,
    env: gitEnvironment(folder),
    ...asOwner,
    timeout: 10 * 60_000,
    maxBuffer: 64 * 1024 * 1024,
  };
  // The two-tree merge refuses a file whose index entry's stat data is stale ("not uptodate")
  // even where its content is the index's (a chown, a copy, a restore): the index is refreshed
  // first, as `git merge` does. A file really changed stays changed, and is still refused.
  await execFileAsync(binary, ['update-index', '-q', '--refresh'], options);
  await execFileAsync(binary, ['read-tree', '-m', '-u', from, to], options);
}

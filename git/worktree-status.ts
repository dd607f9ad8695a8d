/**
 * Whether a worktree holds work that is not in its base: its changed files and its commits ahead
 * and behind, read by git status reports and by cleanup before anything is removed.
 */
import { branchRef } from './branches';
import { gitAt, run, type GitOptions } from './git';

export interface FileStatus {
  path: string;
  status: string; // the two-letter porcelain code, e.g. " M", "??", "A "
}

/**
 * Whether a worktree holds uncommitted work, failing closed: a status git cannot read is
 * `unreadable` (with its error), which every caller treats as dirty: never removed, never clean.
 */
export async function worktreeDirtiness(
  dir: string,
  options: GitOptions,
): Promise<{ state: 'clean' | 'dirty' } | { state: 'unreadable'; err: unknown }> {
  try {
    return { state: (await fileStatus(dir, options)).length > 0 ? 'dirty' : 'clean' };
  } catch (err) {
    return { state: 'unreadable', err };
  }
}

/** Changed, staged and untracked files of a worktree (porcelain v1, NUL separated, so any file name is safe). */
export async function fileStatus(dir: string, options: GitOptions): Promise<FileStatus[]> {
  return parsePorcelainZ(await run(gitAt(dir, options), ['status', '--porcelain=v1', '-z', '--untracked-files=all']));
}

/** The files of `git status --porcelain=v1 -z` output (a rename's source is skipped). */
export function parsePorcelainZ(out: string): FileStatus[] {
  const parts = out.split('\0');
  const files: FileStatus[] = [];
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i]!;
    if (entry.length < 4) continue;
    const status = entry.slice(0, 2);
    files.push({ path: entry.slice(3), status });
    if (status[0] === 'R' || status[0] === 'C') i++; // the next part is the rename's source
  }
  return files;
}

/** Commits HEAD has that `base` has not (ahead) and the reverse (behind). */
export async function aheadBehind(
  dir: string,
  base: string,
  options: GitOptions,
): Promise<{ ahead: number; behind: number } | null> {
  try {
    const out = (
      await run(gitAt(dir, options), ['rev-list', '--left-right', '--count', `${branchRef(base)}...HEAD`])
    ).trim();
    const [behind, ahead] = out.split(/\s+/).map(Number);
    return { ahead: ahead ?? 0, behind: behind ?? 0 };
  } catch {
    return null;
  }
}

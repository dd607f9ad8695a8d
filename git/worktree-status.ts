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

/**
 * A worktree's branch (null: detached), HEAD commit (null: none yet) and changed, staged and
 * untracked files from one git process (`--porcelain=v2 --branch`), where three read them before
 * (a status report's fixed cost: each process is a fork and a start of git).
 */
export async function statusWithHead(
  dir: string,
  options: GitOptions,
): Promise<{ branch: string | null; head: string | null; files: FileStatus[] }> {
  const out = await run(gitAt(dir, options), ['status', '--porcelain=v2', '--branch', '-z', '--untracked-files=all']);
  return parsePorcelainV2Z(out);
}

/** The fields before the path of each kind of `--porcelain=v2` entry (git-status(1)). */
const V2_FIELDS_BEFORE_PATH: Record<string, number> = { '1': 8, '2': 9, u: 10, '?': 1, '!': 1 };

/** `git status --porcelain=v2 --branch -z` output: the branch headers, and each file as porcelain v1 codes it. */
function parsePorcelainV2Z(out: string): { branch: string | null; head: string | null; files: FileStatus[] } {
  const parts = out.split('\0');
  let branch: string | null = null;
  let head: string | null = null;
  const files: FileStatus[] = [];
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i]!;
    if (entry.startsWith('# branch.oid ')) {
      const oid = entry.slice('# branch.oid '.length);
      head = /^[0-9a-f]{40,64}$/.test(oid) ? oid : null;
      continue;
    }
    if (entry.startsWith('# branch.head ')) {
      const name = entry.slice('# branch.head '.length);
      branch = name === '(detached)' ? null : name;
      continue;
    }
    const kind = entry[0] ?? '';
    const before = V2_FIELDS_BEFORE_PATH[kind];
    if (before === undefined || kind === '!') continue;
    // The path is everything after the fields before it (it may hold spaces).
    let at = 0;
    for (let f = 0; f < before && at !== -1; f++) at = entry.indexOf(' ', at) + 1 || -1;
    if (at <= 0) continue;
    const status = kind === '?' ? '??' : entry.slice(2, 4).replace(/\./g, ' ');
    files.push({ path: entry.slice(at), status });
    if (kind === '2') i++; // the next part is the rename's source
  }
  return { branch, head, files };
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

/**
 * A task's diff [R8.1], as data: what is asked of the host that holds each repository, what it
 * answers, and the reading of git's NUL-separated output (`--raw --numstat -z`)
 * into files. The git of it is git/task-diff.ts; where it is read, executors/host/task-diff.ts.
 */

export const DIFF_FILE_STATUSES = ['added', 'modified', 'deleted', 'renamed', 'type_changed', 'untracked'] as const;
type DiffFileStatus = (typeof DIFF_FILE_STATUSES)[number];

export interface DiffFile {
  path: string;
  /** A rename's source. */
  previousPath?: string;
  status: DiffFileStatus;
  additions: number;
  deletions: number;
  binary: boolean;
  /** Not committed on the task branch: the worktree's changes and untracked files, or a release's saved work. */
  uncommitted: boolean;
}

export interface RepositoryDiff {
  repositoryId: string;
  baseBranch: string;
  /** null: the task has no branch yet, or it shares no history with its base. */
  mergeBase: string | null;
  /** The task branch's commit the diff took; null when there is no branch yet. */
  head: string | null;
  ahead: number;
  behind: number;
  files: DiffFile[];
  /** Only when asked: the committed part first, then the uncommitted. */
  patch?: string;
  /** The file list or the patch was cut at TWS_DIFF_MAX_FILES / TWS_DIFF_MAX_BYTES. */
  truncated: boolean;
}

/** One repository of a task as its host reads it. */
export interface DiffSource {
  repositoryId: string;
  sourcePath: string;
  baseBranch: string;
  taskBranch: string | null;
  /** The active host worktree (or checkout) whose uncommitted work is read; null for none, or one on an SSH target. */
  worktreePath: string | null;
  /** Saved work of a released task, not yet put back (oldest first): its diff against its first parent is uncommitted. */
  savedCommits: string[];
}

export interface DiffRequest {
  sources: DiffSource[];
  patch: boolean;
  /** Limit to this path (a file or a folder), taken literally. */
  path?: string;
  maxBytes: number;
  maxFiles: number;
}

/** What is left of an answer's allowance as the repositories are read in turn. */
export interface DiffBudget {
  bytes: number;
  files: number;
}

const STATUS_OF_LETTER: Record<string, DiffFileStatus> = {
  A: 'added',
  M: 'modified',
  D: 'deleted',
  R: 'renamed',
  C: 'added',
  T: 'type_changed',
};

interface NameStatus {
  path: string;
  previousPath?: string;
  status: DiffFileStatus;
}

/**
 * The raw records of `git diff --raw --numstat -z` (they come first): `:<modes> <ids> M\0path\0`,
 * `:… R100\0from\0to\0`. A record cut short at the end is dropped; answers where the counts begin.
 */
function parseRawZ(parts: string[]): { files: NameStatus[]; end: number } {
  const files: NameStatus[] = [];
  // A record counts only when each of its parts ended with its NUL (the last part is what followed the last one).
  const complete = (count: number, at: number) => at + count <= parts.length - 1;
  let i = 0;
  while (complete(2, i) && parts[i]!.startsWith(':')) {
    const letter = parts[i]!.slice(parts[i]!.lastIndexOf(' ') + 1)[0];
    if (letter === 'R' || letter === 'C') {
      if (!complete(3, i)) break;
      const [from, to] = [parts[i + 1]!, parts[i + 2]!];
      files.push(letter === 'R' ? { path: to, previousPath: from, status: 'renamed' } : { path: to, status: 'added' });
      i += 3;
    } else {
      // An unmerged path (U) or anything unknown is a modification of the path.
      files.push({ path: parts[i + 1]!, status: STATUS_OF_LETTER[letter ?? ''] ?? 'modified' });
      i += 2;
    }
  }
  return { files, end: i };
}

interface NumStat {
  additions: number;
  deletions: number;
  binary: boolean;
}

/** The counts after the raw records: `3\t1\tpath\0`, a rename `3\t1\t\0from\0to\0`, binary `-\t-\t…`; keyed by the (new) path. */
function parseNumstatZ(parts: string[], from: number): Map<string, NumStat> {
  const stats = new Map<string, NumStat>();
  for (let i = from; i < parts.length - 1;) {
    const m = /^(-|\d+)\t(-|\d+)\t([\s\S]*)$/.exec(parts[i]!);
    if (!m) break;
    const binary = m[1] === '-';
    const stat = { additions: binary ? 0 : Number(m[1]), deletions: binary ? 0 : Number(m[2]), binary };
    if (m[3] === '') {
      if (i + 3 > parts.length - 1) break; // a rename cut short
      stats.set(parts[i + 2]!, stat);
      i += 3;
    } else {
      stats.set(m[3]!, stat);
      i += 1;
    }
  }
  return stats;
}

/**
 * The files of one `git diff --raw --numstat -z`, each with its counts. From an output that was
 * cut, a file whose counts were cut off is left out rather than shown with none.
 */
export function filesOf(out: string, uncommitted: boolean, cut: boolean): DiffFile[] {
  const parts = out.split('\0');
  const raw = parseRawZ(parts);
  const stats = parseNumstatZ(parts, raw.end);
  const files: DiffFile[] = [];
  for (const f of raw.files) {
    const stat = stats.get(f.path);
    if (!stat && cut) break;
    files.push({
      path: f.path,
      ...(f.previousPath !== undefined ? { previousPath: f.previousPath } : {}),
      status: f.status,
      ...(stat ?? { additions: 0, deletions: 0, binary: false }),
      uncommitted,
    });
  }
  return files;
}

/** An untracked file's counts, from `git diff --no-index --numstat -z /dev/null <path>` (`2\t0\t\0/dev/null\0path\0`). */
export function untrackedFile(path: string, numstat: string): DiffFile {
  const m = /^(-|\d+)\t(-|\d+)\t/.exec(numstat);
  const binary = m?.[1] === '-';
  return {
    path,
    status: 'untracked',
    additions: m && !binary ? Number(m[1]) : 0,
    deletions: 0,
    binary,
    uncommitted: true,
  };
}

/**
 * A patch cut to `room` bytes at the end of its last whole line (a cut never splits a character
 * or a line); `cut` says whether anything was left out.
 */
export function cutPatch(patch: Buffer, room: number): { text: string; cut: boolean } {
  if (patch.length <= room) return { text: patch.toString('utf8'), cut: false };
  const head = patch.subarray(0, Math.max(0, room));
  const end = head.lastIndexOf(0x0a);
  return { text: head.subarray(0, end + 1).toString('utf8'), cut: true };
}

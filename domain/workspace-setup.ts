/**
 * What makes a new workspace ready to work in, per repository: files copied from the source
 * checkout into each new worktree (`copyFiles`: a `.env`, local configuration, typically ignored
 * or untracked), and a command run once in it before the first agent starts (`setup`: an install,
 * a build), with what a failing setup does (`setupFailure`: `warn`, the launch goes on and says so;
 * `refuse`, the launch fails whole and is undone). Pure: the copying is git/copy-files.ts's, the
 * run executors/'s.
 *
 * A `copyFiles` pattern is a path from the checkout's top, `/`-separated: `*` any characters within
 * one segment, `**` any number of segments (`.env`, `config/local.*.json`, `**\/.env.local`).
 */

export type SetupFailure = 'warn' | 'refuse';

/** At most this many patterns and argv items, each at most this long. */
export const COPY_FILES_LIMITS = { patterns: 100, length: 200 } as const;
export const SETUP_LIMITS = { items: 100, length: 10_000 } as const;

/** What one copy takes at most: per file, all files together, files in all, entries looked at. */
export const COPY_CAPS = {
  fileBytes: 10 * 1024 * 1024,
  totalBytes: 100 * 1024 * 1024,
  files: 1000,
  entriesWalked: 200_000,
} as const;

/** Why a pattern cannot be one (null when it can). */
export function copyPatternProblem(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > COPY_FILES_LIMITS.length)
    return `must be 1 to ${COPY_FILES_LIMITS.length} characters`;
  if (pattern.startsWith('/')) return 'is relative to the checkout: no leading "/"';
  const segments = pattern.split('/');
  if (segments.includes('..') || segments.includes('.')) return 'may not contain "." or ".." segments';
  if (segments.includes('')) return 'may not contain an empty segment (no "//", no trailing "/")';
  if (segments.includes('.git') || segments[0] === '.git') return 'may not name the .git folder';
  if (/[\0-\x1f\\[\]?!{}]/.test(pattern)) return 'may use letters, digits, "/", ".", "-", "_", "*" and spaces only';
  if (segments.every((s) => s === '**' || s === '*')) return 'would copy everything';
  return null;
}

/** Why a setup argv cannot be one (null when it can). */
export function setupProblem(argv: string[]): string | null {
  if (argv.length === 0 || argv.length > SETUP_LIMITS.items) return `must have 1 to ${SETUP_LIMITS.items} items`;
  if (argv.some((a) => a.length > SETUP_LIMITS.length || a.includes('\0')))
    return `items must be at most ${SETUP_LIMITS.length} characters, without NUL`;
  if (argv[0]!.length === 0) return 'must name a command first';
  return null;
}

const escape = (s: string) => s.replace(/[.+^$()|]/g, '\\$&');
const segmentRe = (segment: string) => new RegExp(`^${escape(segment).replace(/\*/g, '.*')}$`);

/** Whether a path (from the checkout's top, `/`-separated) matches a pattern. */
export function copyPatternMatches(pattern: string, path: string): boolean {
  const p = pattern.split('/');
  const s = path.split('/');
  const match = (i: number, j: number): boolean => {
    if (i === p.length) return j === s.length;
    if (p[i] === '**') {
      for (let k = j; k <= s.length; k++) if (match(i + 1, k)) return true;
      return false;
    }
    return j < s.length && segmentRe(p[i]!).test(s[j]!) && match(i + 1, j + 1);
  };
  return match(0, 0);
}

/** Whether a folder (from the top) may hold a match of a pattern: the walk goes into no other. */
export function copyPatternMayEnter(pattern: string, folder: string): boolean {
  const p = pattern.split('/');
  const s = folder.split('/');
  const enter = (i: number, j: number): boolean => {
    if (j === s.length) return i < p.length; // the folder is a prefix: something below may match
    if (i === p.length) return false;
    if (p[i] === '**') return true;
    return segmentRe(p[i]!).test(s[j]!) && enter(i + 1, j + 1);
  };
  return enter(0, 0);
}

/** What a launch that made the workspace says of its copies: what was copied, what was skipped and why. */
export interface CopyOutcome {
  files: string[];
  skipped: { path: string; reason: CopySkipReason }[];
}

export type CopySkipReason =
  | 'symlink' // a link in the source checkout, or on the way to its place in the worktree: never followed
  | 'not_a_file'
  | 'too_large' // over COPY_CAPS.fileBytes
  | 'total_too_large' // the copies together would pass COPY_CAPS.totalBytes
  | 'too_many_files'
  | 'exists' // the worktree has it already (committed): never overwritten
  | 'unreadable'
  | 'unwritable'; // its place in the worktree could not be written (a folder the setup or the checkout made read-only)

/** A setup's outcome: its exit, or why it has none. */
type SetupStatus = 'succeeded' | 'failed' | 'timed_out' | 'not_started';

export interface SetupOutcome {
  status: SetupStatus;
  exitCode: number | null;
  signal: string | null;
}

/** What an agent's exit says of a setup, or a time limit that ended it. */
export function setupStatusOf(
  exit: { exitCode: number | null; signal: string | null } | null,
  timedOut: boolean,
): SetupOutcome {
  if (timedOut) return { status: 'timed_out', exitCode: exit?.exitCode ?? null, signal: exit?.signal ?? null };
  if (!exit) return { status: 'not_started', exitCode: null, signal: null };
  return { status: exit.exitCode === 0 ? 'succeeded' : 'failed', exitCode: exit.exitCode, signal: exit.signal };
}

/**
 * The repository's `copyFiles` into a worktree just made (domain/workspace-setup.ts): the files of
 * the source checkout that match its patterns (a `.env`, local configuration), copied with their
 * modes. Fail closed at every step: a link is never followed (one in the source checkout, or on the
 * way to a file's place in the worktree, is skipped and named), a file is read and written through
 * a descriptor whose real path is checked to be inside the checkout and the worktree, nothing that
 * is already in the worktree is overwritten, and the sizes are capped per file and in all. What was
 * copied and what was skipped (with why) is the answer; nothing of the checkout is ever changed.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  readSync,
  writeSync,
} from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  copyPatternMatches,
  copyPatternMayEnter,
  COPY_CAPS,
  type CopyOutcome,
  type CopySkipReason,
} from '../../domain/workspace-setup';
import { isWithinFolder } from '../../domain/task-layout';

/** The real path a descriptor is open on (the kernel's, whatever links led to it). */
const realPathOf = (fd: number): string => readlinkSync(`/proc/self/fd/${fd}`);

/** The matching files of the checkout (paths from its top), and the links and non-files that matched. */
async function candidates(
  source: string,
  patterns: string[],
): Promise<{ files: string[]; skipped: CopyOutcome['skipped'] }> {
  const files: string[] = [];
  const skipped: CopyOutcome['skipped'] = [];
  let walked = 0;
  const matches = (rel: string) => patterns.some((p) => copyPatternMatches(p, rel));
  const walk = async (rel: string): Promise<void> => {
    const entries = await readdir(rel ? path.join(source, rel) : source, { withFileTypes: true });
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (++walked > COPY_CAPS.entriesWalked) return;
      if (!rel && entry.name === '.git') continue;
      const at = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isSymbolicLink()) {
        if (matches(at) || patterns.some((p) => copyPatternMayEnter(p, at)))
          skipped.push({ path: at, reason: 'symlink' });
      } else if (entry.isDirectory()) {
        if (patterns.some((p) => copyPatternMayEnter(p, at))) await walk(at);
      } else if (matches(at)) {
        if (entry.isFile()) files.push(at);
        else skipped.push({ path: at, reason: 'not_a_file' });
      }
    }
  };
  await walk('');
  return { files, skipped };
}

/** The folders on the way to `rel` in the worktree, made where missing; a link or a non-folder on the way: why not. */
function parentsOf(worktree: string, rel: string): CopySkipReason | null {
  const parts = rel.split('/').slice(0, -1);
  for (let i = 1; i <= parts.length; i++) {
    const folder = path.join(worktree, ...parts.slice(0, i));
    let st;
    try {
      st = lstatSync(folder);
    } catch {
      mkdirSync(folder, { mode: 0o755 });
      continue;
    }
    if (st.isSymbolicLink()) return 'symlink';
    if (!st.isDirectory()) return 'not_a_file';
  }
  return null;
}

/** One file of the checkout read through a checked descriptor (its bytes and mode), or why not; `room`: bytes the copies may still take. */
function readOne(source: string, rel: string, room: number): { data: Buffer; mode: number } | CopySkipReason {
  let from: number;
  try {
    from = openSync(path.join(source, rel), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ELOOP' ? 'symlink' : 'unreadable';
  }
  try {
    const st = fstatSync(from);
    if (!st.isFile()) return 'not_a_file';
    // A folder on its way replaced by a link since the walk: the real path is elsewhere.
    if (!isWithinFolder(realPathOf(from), source)) return 'symlink';
    if (st.size > COPY_CAPS.fileBytes) return 'too_large';
    if (st.size > room) return 'total_too_large';
    const data = Buffer.alloc(st.size);
    let read = 0;
    while (read < st.size) {
      const n = readSync(from, data, read, st.size - read, null);
      if (n === 0) break;
      read += n;
    }
    // It changed meanwhile (shrank or grew): not a copy of any one state of it.
    if (read !== st.size || readSync(from, Buffer.alloc(1), 0, 1, null) !== 0) return 'unreadable';
    return { data, mode: st.mode & 0o777 };
  } finally {
    closeSync(from);
  }
}

/** A file the checkout gives a new worktree: its path from the top, its bytes, its mode. */
export interface FileToCopy {
  path: string;
  data: Buffer;
  mode: number;
}

/**
 * The checkout's files matching `patterns` (a real folder), read whole: at most COPY_CAPS of them,
 * each named with why where it is not taken. Nothing of the checkout is ever changed.
 */
export async function readCopies(
  source: string,
  patterns: string[],
): Promise<{ files: FileToCopy[]; skipped: CopyOutcome['skipped'] }> {
  const taken: FileToCopy[] = [];
  const skipped: CopyOutcome['skipped'] = [];
  if (patterns.length === 0) return { files: taken, skipped };
  const found = await candidates(source, patterns);
  skipped.push(...found.skipped);
  let room: number = COPY_CAPS.totalBytes;
  for (const rel of found.files) {
    if (taken.length >= COPY_CAPS.files) {
      skipped.push({ path: rel, reason: 'too_many_files' });
      continue;
    }
    const read = readOne(source, rel, room);
    if (typeof read === 'string') skipped.push({ path: rel, reason: read });
    else {
      taken.push({ path: rel, ...read });
      room -= read.data.length;
    }
  }
  return { files: taken, skipped };
}

/** One file written into the worktree (through a checked descriptor, never over anything), or why not. */
function writeOne(worktree: string, file: FileToCopy): CopySkipReason | null {
  const way = parentsOf(worktree, file.path);
  if (way) return way;
  let to: number;
  try {
    to = openSync(
      path.join(worktree, file.path),
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      file.mode,
    );
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EEXIST' ? 'exists' : 'unwritable';
  }
  try {
    if (!isWithinFolder(realPathOf(to), worktree)) return 'symlink';
    for (let written = 0; written < file.data.length;)
      written += writeSync(to, file.data, written, file.data.length - written);
    // Its own mode exactly (the umask took bits from it at the open).
    fchmodSync(to, file.mode);
    return null;
  } finally {
    closeSync(to);
  }
}

/**
 * Copies the checkout's files matching `patterns` into the worktree (both real folders, the
 * worktree just made): at most COPY_CAPS of them; paths in the answer are from the top.
 */
export async function copyIntoWorktree(source: string, worktree: string, patterns: string[]): Promise<CopyOutcome> {
  const read = await readCopies(source, patterns);
  const outcome: CopyOutcome = { files: [], skipped: read.skipped };
  for (const file of read.files) {
    const why = writeOne(worktree, file);
    if (why) outcome.skipped.push({ path: file.path, reason: why });
    else outcome.files.push(file.path);
  }
  return outcome;
}

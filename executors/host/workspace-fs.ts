/** Small filesystem facts the workspace activities share. */
import { lstat, open, readFile, realpath, rmdir, unlink } from 'node:fs/promises';
import { lstatSync, type Stats } from 'node:fs';
import path from 'node:path';
import { OWNERSHIP_MARKER_FILE, parseOwnershipMarker, type OwnershipMarker } from '../../domain/task-layout';
import { DIR_FLAGS, replaceFile } from '../../git/untrusted-folder';

export async function isRealDirectory(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isDirectory();
  } catch {
    return false;
  }
}

/** {@link isRealDirectory}, synchronously (the preparation of a sandboxed start: executors/host/git-store-layout.ts). */
export function isRealDirectorySync(p: string): boolean {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;

/** Whether anything is at the path; a path that cannot be examined (permission, I/O) throws, never reads as gone. */
export async function pathExists(p: string): Promise<boolean> {
  return (await lstatIfPresent(p)) !== null;
}

/** {@link pathExists}, synchronously (the preparation of a sandboxed start). */
export function pathExistsSync(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch (err) {
    if (codeOf(err) === 'ENOENT' || codeOf(err) === 'ENOTDIR') return false;
    throw err;
  }
}

/** lstat, or null when nothing is there; any other failure (permission, I/O) is thrown, never read as absence. */
export async function lstatIfPresent(p: string): Promise<Stats | null> {
  try {
    return await lstat(p);
  } catch (err) {
    if (codeOf(err) === 'ENOENT' || codeOf(err) === 'ENOTDIR') return null;
    throw err;
  }
}

/** Removes a file; one already gone is fine, any other failure is thrown. */
export async function unlinkIfPresent(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (err) {
    if (codeOf(err) !== 'ENOENT') throw err;
  }
}

/** Removes a folder only when it is empty (never recursively): true when it is gone, false when something is left in it; other failures are thrown. */
export async function rmdirIfEmpty(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return true;
    if (codeOf(err) === 'ENOTEMPTY' || codeOf(err) === 'EEXIST') return false;
    throw err;
  }
}

/** A path with its symlinks resolved; one that cannot be resolved (gone) as its absolute form. */
export const realPathOrResolved = (p: string): Promise<string> => realpath(p).catch(() => path.resolve(p));

export async function sameRealPath(a: string, b: string): Promise<boolean> {
  const [ra, rb] = await Promise.all([realPathOrResolved(a), realPathOrResolved(b)]);
  return ra === rb;
}

/**
 * The task folder's ownership marker: null only when there is no marker file. A marker file that
 * cannot be read, or does not hold a marker, is `unreadable`: it may name another task, so no
 * caller takes it for absent (an audit refuses, a materialization does not write over it, a
 * cleanup keeps it).
 */
export async function readMarker(taskFolder: string): Promise<OwnershipMarker | null | 'unreadable'> {
  let text: string;
  try {
    text = await readFile(path.join(taskFolder, OWNERSHIP_MARKER_FILE), 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : 'unreadable';
  }
  return parseOwnershipMarker(text) ?? 'unreadable';
}

/**
 * Writes the task folder's marker whole or not at all (a file beside it, renamed over it): a
 * marker read while it is written (two runs of one launch step at once) is the old one or the
 * new one, never an empty file that would read as another task's.
 */
export async function writeMarker(taskFolder: string, text: string): Promise<void> {
  const folder = await open(taskFolder, DIR_FLAGS);
  await replaceFile(folder, OWNERSHIP_MARKER_FILE, text, 0o644).finally(() => folder.close());
}

/** Whether the task folder's marker names this task (an absent or unreadable one does not). */
export const markerOwnedBy = (marker: OwnershipMarker | null | 'unreadable', taskId: string): boolean =>
  marker !== null && marker !== 'unreadable' && marker.taskId === taskId;

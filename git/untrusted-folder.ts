/**
 * Reading a folder an agent may have shaped (its object store, git/agent-objects.ts): nothing in
 * it is trusted, so folders are opened without following links and read through their
 * descriptors, and a folder swapped for a link meanwhile is never followed. Shared by the
 * store's preparation and by bringing its objects home.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';

export const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW;

/** A path through an open folder's descriptor: resolved from that folder, whatever its path is now. */
export const via = (dir: FileHandle | number, name = ''): string =>
  `/proc/self/fd/${typeof dir === 'number' ? dir : dir.fd}${name ? `/${name}` : ''}`;

/** Absent, or not a real folder (a link, a file): nothing of the store's to read there. */
const notAFolder = (err: unknown): boolean => ['ENOENT', 'ENOTDIR', 'ELOOP'].includes(codeOf(err) ?? '');
export const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;

export async function openDirIfPresent(p: string): Promise<FileHandle | null> {
  try {
    return await open(p, DIR_FLAGS);
  } catch (err) {
    if (notAFolder(err)) return null;
    throw err;
  }
}

/**
 * The synchronous forms, for the few syscalls on the path of every sandboxed start (a store's
 * preparation): each is a syscall of microseconds, where a promise of the thread pool waited
 * behind the start's forty others (about 1 ms each). A descriptor each, closed by the caller.
 */
export function openDirIfPresentSync(p: string): number | null {
  try {
    return openSync(p, DIR_FLAGS);
  } catch (err) {
    if (notAFolder(err)) return null;
    throw err;
  }
}

/** {@link readRegularFile}, synchronously: for a small file (a store's `info/alternates`). */
export function readRegularFileSync(p: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(p, FILE_FLAGS);
  } catch {
    return null;
  }
  try {
    return fstatSync(fd).isFile() ? readFileSync(fd) : null;
  } finally {
    closeSync(fd);
  }
}

/** {@link replaceFile}, synchronously, through a folder's descriptor. */
export function replaceFileSync(dir: number, name: string, text: string, mode: number): void {
  const temporary = temporaryName(name);
  const fd = openSync(
    via(dir, temporary),
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    writeFileSync(fd, text);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(via(dir, temporary), via(dir, name));
  } catch (err) {
    try {
      unlinkSync(via(dir, temporary));
    } catch {
      // Its own temporary, left in the service's folder: the rename's failure is the one said.
    }
    throw err;
  }
}

const temporaryName = (name: string): string => `.${name}.tws-${process.pid}-${randomBytes(4).toString('hex')}`;

/** A regular file's bytes, read through a descriptor opened without following a link; null for anything else or gone. */
export async function readRegularFile(p: string): Promise<Buffer | null> {
  let file: FileHandle;
  try {
    file = await open(p, FILE_FLAGS);
  } catch {
    return null;
  }
  try {
    const stat: Stats = await file.stat();
    if (!stat.isFile()) return null;
    return await file.readFile();
  } finally {
    await file.close();
  }
}

/**
 * A file written beside its name, through the folder's descriptor, and renamed over it: a reader
 * sees the old text or the new, never a part; a link planted at either name is never followed. Its
 * own temporary file goes when the rename fails, whose failure is the one said.
 */
export async function replaceFile(dir: FileHandle, name: string, text: string, mode: number): Promise<void> {
  const temporary = temporaryName(name);
  const file = await open(
    via(dir, temporary),
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  await file.writeFile(text).finally(() => file.close());
  await rename(via(dir, temporary), via(dir, name)).catch(async (err: unknown) => {
    await unlink(via(dir, temporary)).catch(() => undefined);
    throw err;
  });
}

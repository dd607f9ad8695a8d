/**
 * Reading a folder an agent may have shaped (its object store, git/agent-objects.ts): nothing in
 * it is trusted, so folders are opened without following links and read through their
 * descriptors, and a folder swapped for a link meanwhile is never followed. Shared by the
 * store's preparation and by bringing its objects home.
 */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';

export const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW;

/** A path through an open folder's descriptor: resolved from that folder, whatever its path is now. */
export const via = (dir: FileHandle, name = ''): string => `/proc/self/fd/${dir.fd}${name ? `/${name}` : ''}`;
export const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;

export async function openDirIfPresent(p: string): Promise<FileHandle | null> {
  try {
    return await open(p, DIR_FLAGS);
  } catch (err) {
    // Absent, or not a real folder (a link, a file): nothing of the store's to read there.
    if (['ENOENT', 'ENOTDIR', 'ELOOP'].includes(codeOf(err) ?? '')) return null;
    throw err;
  }
}

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
  const temporary = `.${name}.tws-${process.pid}-${randomBytes(4).toString('hex')}`;
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

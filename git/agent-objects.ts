/**
 * A sandboxed worktree agent's own object store (issue 32). In its sandbox, the repository's
 * `objects/` folder is this store (writable) and the repository's real objects are bound
 * read-only inside it (`tws-base`, named by the store's `info/alternates`): the agent reads all
 * history and adds to it, and never removes or rewrites an object of the repository.
 *
 * The service brings the store's objects home (git/agent-objects-home.ts): the store is the
 * agent's to write, so nothing in it is trusted.
 *
 * Layout, on the host, under the service's data folder (hidden from every agent):
 *   <dataDir>/agent-objects/<key>/store/      the store (bound over the repository's objects/)
 *   <dataDir>/agent-objects/<key>/store/tws-base/   an empty folder: the mount point of the real objects
 *   <dataDir>/agent-objects/<key>/common-dir  the repository's common git dir (written by the service only)
 * with <key> a hash of the worktree's path: one store per worktree, shared by its sessions.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { OBJECTS_BASE_MOUNT } from '../domain/sandbox';
import { codeOf, DIR_FLAGS, openDirIfPresent, readRegularFile, replaceFile, via } from './untrusted-folder';

/** The folder inside the store that the repository's real objects are bound onto, read-only. */
const BASE_MOUNT = OBJECTS_BASE_MOUNT;

export const objectStoreKeyDir = (dataDir: string, worktreePath: string): string =>
  path.join(
    dataDir,
    'agent-objects',
    createHash('sha256').update(path.resolve(worktreePath)).digest('hex').slice(0, 32),
  );
export const objectStoreOf = (keyDir: string): string => path.join(keyDir, 'store');

/** Whether a path is a real folder at exactly that path (no link on the way). */
export async function isExactFolder(p: string): Promise<boolean> {
  try {
    return (await realpath(p)) === path.resolve(p);
  } catch {
    return false;
  }
}

/**
 * The store of a worktree's agent, made when missing, with the alternate that shows it the
 * repository's objects in the sandbox. Null when the repository's objects folder is not a real
 * folder at its own path (a link): then nothing is bound writable and the agent cannot add
 * objects (fail closed).
 */
export async function prepareObjectStore(
  dataDir: string,
  worktreePath: string,
  commonDir: string,
): Promise<string | null> {
  const objects = path.join(commonDir, 'objects');
  const keyDir = objectStoreKeyDir(dataDir, worktreePath);
  const store = objectStoreOf(keyDir);
  // On the path of every sandboxed start: what does not depend on another step runs beside it.
  const [exact, recorded] = await Promise.all([
    Promise.all([isExactFolder(commonDir), isExactFolder(objects)]).then((both) => both.every(Boolean)),
    recordedCommonDir(keyDir),
  ]);
  if (!exact) return null;
  // The key folder is the service's alone; what is inside the store, an agent may have shaped:
  // reached only through descriptors of real folders.
  await mkdir(store, { recursive: true });
  const root = await openDirIfPresent(store);
  if (!root) return null;
  try {
    await Promise.all(
      ['info', 'pack', BASE_MOUNT].map((name) =>
        mkdir(via(root, name)).catch((err: unknown) => {
          if (codeOf(err) !== 'EEXIST') throw err;
        }),
      ),
    );
    const [info, base] = await Promise.all([
      openDirIfPresent(via(root, 'info')),
      openDirIfPresent(via(root, BASE_MOUNT)),
    ]);
    if (!info || !base) {
      await Promise.all([info?.close(), base?.close()]);
      return null;
    }
    try {
      // In the sandbox the store is at <commonDir>/objects and the real objects under it. Replaced
      // whole (never truncated in place) when it differs: another session's agent may be reading it.
      const alternates = `${path.join(objects, BASE_MOUNT)}\n`;
      const [current] = await Promise.all([readRegularFile(via(info, 'alternates')), base.close()]);
      if (current?.toString() !== alternates) await replaceFile(info, 'alternates', alternates, 0o644);
    } finally {
      await info.close();
    }
  } finally {
    await root.close();
  }
  if (recorded !== commonDir) {
    const keyFolder = await open(keyDir, DIR_FLAGS);
    await replaceFile(keyFolder, 'common-dir', commonDir, 0o600).finally(() => keyFolder.close());
  }
  return store;
}

/**
 * The common git dir the service recorded for a store (`common-dir`); null only when there is
 * none yet. Any other failure to read it is thrown: neither a preparation nor a bringing home
 * goes on from a record it could not read.
 */
export async function recordedCommonDir(keyDir: string): Promise<string | null> {
  return readFile(path.join(keyDir, 'common-dir'), 'utf8').catch((err: unknown) => {
    if (codeOf(err) === 'ENOENT') return null;
    throw err;
  });
}

/** The store of a worktree that is gone: its objects were brought home first (cleanup does both, in that order). */
export async function discardObjectStore(dataDir: string, worktreePath: string): Promise<void> {
  // No agent runs in it any more; rm never follows a link inside.
  await rm(objectStoreKeyDir(dataDir, worktreePath), { recursive: true, force: true });
}

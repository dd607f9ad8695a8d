/**
 * A sandboxed worktree agent's own object store. In its sandbox, the repository's
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
import { closeSync, mkdirSync, openSync, readFileSync, realpathSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { OBJECTS_BASE_MOUNT } from '../domain/sandbox';
import { codeOf, DIR_FLAGS, openDirIfPresentSync, readRegularFileSync, replaceFileSync, via } from './untrusted-folder';

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
export function isExactFolder(p: string): boolean {
  try {
    return realpathSync.native(p) === path.resolve(p);
  } catch {
    return false;
  }
}

/**
 * The store of a worktree's agent, made when missing, with the alternate that shows it the
 * repository's objects in the sandbox. Null when the repository's objects folder is not a real
 * folder at its own path (a link): then nothing is bound writable and the agent cannot add
 * objects (fail closed). On the path of every sandboxed start, synchronously: a dozen syscalls of
 * microseconds each (git/untrusted-folder.ts says why).
 */
export function prepareObjectStore(dataDir: string, worktreePath: string, commonDir: string): string | null {
  const objects = path.join(commonDir, 'objects');
  const keyDir = objectStoreKeyDir(dataDir, worktreePath);
  const store = objectStoreOf(keyDir);
  if (!isExactFolder(commonDir) || !isExactFolder(objects)) return null;
  const recorded = recordedCommonDirSync(keyDir);
  // The key folder is the service's alone; what is inside the store, an agent may have shaped:
  // reached only through descriptors of real folders.
  mkdirSync(store, { recursive: true });
  const root = openDirIfPresentSync(store);
  if (root === null) return null;
  try {
    for (const name of ['info', 'pack', BASE_MOUNT])
      try {
        mkdirSync(via(root, name));
      } catch (err) {
        if (codeOf(err) !== 'EEXIST') throw err;
      }
    const info = openDirIfPresentSync(via(root, 'info'));
    const base = openDirIfPresentSync(via(root, BASE_MOUNT));
    if (base !== null) closeSync(base);
    if (info === null || base === null) {
      if (info !== null) closeSync(info);
      return null;
    }
    try {
      // In the sandbox the store is at <commonDir>/objects and the real objects under it. Replaced
      // whole (never truncated in place) when it differs: another session's agent may be reading it.
      const alternates = `${path.join(objects, BASE_MOUNT)}\n`;
      if (readRegularFileSync(via(info, 'alternates'))?.toString() !== alternates)
        replaceFileSync(info, 'alternates', alternates, 0o644);
    } finally {
      closeSync(info);
    }
  } finally {
    closeSync(root);
  }
  if (recorded !== commonDir) {
    const keyFolder = openSync(keyDir, DIR_FLAGS);
    try {
      replaceFileSync(keyFolder, 'common-dir', commonDir, 0o600);
    } finally {
      closeSync(keyFolder);
    }
  }
  return store;
}

/** {@link recordedCommonDir}, synchronously (a store's preparation). */
function recordedCommonDirSync(keyDir: string): string | null {
  try {
    return readFileSync(path.join(keyDir, 'common-dir'), 'utf8');
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return null;
    throw err;
  }
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

/**
 * A sandboxed worktree agent's own object store (issue 32). In its sandbox, the repository's
 * `objects/` folder is this store (writable) and the repository's real objects are bound
 * read-only inside it (`tws-base`, named by the store's `info/alternates`): the agent reads all
 * history and adds to it, and never removes or rewrites an object of the repository.
 *
 * The service brings the store's objects home (into the repository's own store) before it reads
 * the branch (git status, cleanup's merge check and removal), when the agent ends and on each
 * periodic check of running agents; an object brought home leaves the store, where the agent
 * still reads it through the alternate. The store is the agent's to write, so nothing in it is
 * trusted: folders are opened without following links and read through their descriptors (a
 * folder swapped for a link meanwhile is never followed), every loose object's name is checked
 * against the hash of its content, and packs are re-indexed by git itself (`index-pack`, which
 * hashes every object), never copied.
 *
 * Layout, on the host, under the service's data folder (hidden from every agent):
 *   <dataDir>/agent-objects/<key>/store/      the store (bound over the repository's objects/)
 *   <dataDir>/agent-objects/<key>/store/tws-base/   an empty folder: the mount point of the real objects
 *   <dataDir>/agent-objects/<key>/common-dir  the repository's common git dir (written by the service only)
 * with <key> a hash of the worktree's path: one store per worktree, shared by its sessions.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { link, mkdir, open, readdir, readFile, realpath, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { inflate } from 'node:zlib';
import { OBJECTS_BASE_MOUNT } from '../domain/sandbox';
import { gitEnvironment } from './git-environment';

const inflateAsync = promisify(inflate);

/** The folder inside the store that the repository's real objects are bound onto, read-only. */
const BASE_MOUNT = OBJECTS_BASE_MOUNT;

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW;
const LOOSE_DIR = /^[0-9a-f]{2}$/;
const LOOSE_FILE = /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/;
const PACK_FILE = /^pack-([0-9a-f]{40}|[0-9a-f]{64})\.pack$/;
const HEADER = /^(blob|tree|commit|tag) (0|[1-9][0-9]*)$/;

export const objectStoreKeyDir = (dataDir: string, worktreePath: string): string =>
  path.join(
    dataDir,
    'agent-objects',
    createHash('sha256').update(path.resolve(worktreePath)).digest('hex').slice(0, 32),
  );
export const objectStoreOf = (keyDir: string): string => path.join(keyDir, 'store');

/** A path through an open folder's descriptor: resolved from that folder, whatever its path is now. */
const via = (dir: FileHandle, name = ''): string => `/proc/self/fd/${dir.fd}${name ? `/${name}` : ''}`;

const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;

async function openDirIfPresent(p: string): Promise<FileHandle | null> {
  try {
    return await open(p, DIR_FLAGS);
  } catch (err) {
    // Absent, or not a real folder (a link, a file): nothing of the store's to read there.
    if (['ENOENT', 'ENOTDIR', 'ELOOP'].includes(codeOf(err) ?? '')) return null;
    throw err;
  }
}

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
  if (!(await isExactFolder(commonDir)) || !(await isExactFolder(objects))) return null;
  const keyDir = objectStoreKeyDir(dataDir, worktreePath);
  const store = objectStoreOf(keyDir);
  // The key folder is the service's alone; what is inside the store, an agent may have shaped:
  // reached only through descriptors of real folders.
  await mkdir(store, { recursive: true });
  const root = await openDirIfPresent(store);
  if (!root) return null;
  try {
    for (const name of ['info', 'pack', BASE_MOUNT]) {
      await mkdir(via(root, name)).catch((err: unknown) => {
        if (codeOf(err) !== 'EEXIST') throw err;
      });
    }
    const [info, base] = await Promise.all([
      openDirIfPresent(via(root, 'info')),
      openDirIfPresent(via(root, BASE_MOUNT)),
    ]);
    await base?.close();
    if (!info || !base) {
      await info?.close();
      return null;
    }
    try {
      // In the sandbox the store is at <commonDir>/objects and the real objects under it. Replaced
      // whole (never truncated in place) when it differs: another session's agent may be reading it.
      const alternates = `${path.join(objects, BASE_MOUNT)}\n`;
      const current = await readRegularFile(via(info, 'alternates'));
      if (current?.toString() !== alternates) await replaceFile(info, 'alternates', alternates, 0o644);
    } finally {
      await info.close();
    }
  } finally {
    await root.close();
  }
  const recorded = await readFile(path.join(keyDir, 'common-dir'), 'utf8').catch(() => null);
  if (recorded !== commonDir) {
    const keyFolder = await open(keyDir, DIR_FLAGS);
    await replaceFile(keyFolder, 'common-dir', commonDir, 0o600).finally(() => keyFolder.close());
  }
  return store;
}

/** A file written beside its name and renamed over it: a reader sees the old text or the new, never a part. */
async function replaceFile(dir: FileHandle, name: string, text: string, mode: number): Promise<void> {
  const temporary = `.${name}.tws-${process.pid}-${randomBytes(4).toString('hex')}`;
  const file = await open(
    via(dir, temporary),
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  await file.writeFile(text).finally(() => file.close());
  await rename(via(dir, temporary), via(dir, name));
}

export interface BroughtHome {
  loose: number;
  packs: number;
  /** Files of the store that are no object (a name whose content hashes otherwise, unreadable data): left where they are. */
  refused: number;
}

const NOTHING: BroughtHome = { loose: 0, packs: 0, refused: 0 };

/**
 * Brings a worktree's store home: every object in it is then in the repository's own store, and
 * no longer in the task's. Nothing to do (no store, an empty one) costs a few system calls.
 */
export async function bringObjectsHome(dataDir: string, worktreePath: string, gitBinary: string): Promise<BroughtHome> {
  return bringStoreHome(objectStoreKeyDir(dataDir, worktreePath), gitBinary);
}

export async function bringStoreHome(keyDir: string, gitBinary: string): Promise<BroughtHome> {
  const commonDir = await readFile(path.join(keyDir, 'common-dir'), 'utf8').catch((err: unknown) => {
    if (codeOf(err) === 'ENOENT') return null;
    throw err;
  });
  // Written by the service only, whole; anything but an absolute path is no repository of it.
  if (commonDir === null || !path.isAbsolute(commonDir)) return NOTHING;
  const root = await openDirIfPresent(objectStoreOf(keyDir));
  if (!root) return NOTHING;
  const home = path.join(commonDir, 'objects');
  const homeRoot = await openDirIfPresent(home);
  if (!homeRoot) {
    await root.close();
    throw new Error("the repository's objects folder is not a real folder");
  }
  const done = { ...NOTHING };
  try {
    for (const name of await readdir(via(root))) {
      if (LOOSE_DIR.test(name)) await bringLooseHome(root, name, homeRoot, done);
    }
    await bringPacksHome(root, commonDir, gitBinary, done);
  } finally {
    await Promise.all([root.close(), homeRoot.close()]);
  }
  return done;
}

async function bringLooseHome(
  root: FileHandle,
  dirName: string,
  homeRoot: FileHandle,
  done: BroughtHome,
): Promise<void> {
  const dir = await openDirIfPresent(via(root, dirName));
  if (!dir) return;
  let homeDir: FileHandle | null = null;
  try {
    for (const name of await readdir(via(dir))) {
      if (!LOOSE_FILE.test(name)) continue;
      const data = await readRegularFile(via(dir, name));
      if (data === null) continue;
      if (!(await isObjectNamed(data, dirName + name))) {
        done.refused++;
        continue;
      }
      if (!homeDir) {
        await mkdir(via(homeRoot, dirName)).catch((err: unknown) => {
          if (codeOf(err) !== 'EEXIST') throw err;
        });
        homeDir = await openDirIfPresent(via(homeRoot, dirName));
        if (!homeDir) throw new Error("a folder of the repository's objects is not a real folder");
      }
      await writeObjectFile(homeDir, name, data);
      // Home now: the agent reads it through the alternate; the store keeps only what is new.
      await unlink(via(dir, name)).catch(() => undefined);
      done.loose++;
    }
  } finally {
    await Promise.all([dir.close(), homeDir?.close()]);
  }
}

/** A regular file's bytes, read through a descriptor opened without following a link; null for anything else or gone. */
async function readRegularFile(p: string): Promise<Buffer | null> {
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

/** A loose object: zlib of `<type> <size>\0<content>`, whose hash (SHA-1, or SHA-256 for a 64-digit name) is its name. */
async function isObjectNamed(data: Buffer, name: string): Promise<boolean> {
  let raw: Buffer;
  try {
    raw = await inflateAsync(data);
  } catch {
    return false;
  }
  const nul = raw.indexOf(0);
  if (nul < 0 || nul > 32) return false;
  const header = HEADER.exec(raw.subarray(0, nul).toString('latin1'));
  if (!header || Number(header[2]) !== raw.length - nul - 1) return false;
  return (
    createHash(name.length === 40 ? 'sha1' : 'sha256')
      .update(raw)
      .digest('hex') === name
  );
}

/** As git writes a loose object: a temporary file, then a link to its name (an object already there is the same object). */
async function writeObjectFile(dir: FileHandle, name: string, data: Buffer): Promise<void> {
  const temporary = `tmp_obj_tws_${process.pid}_${randomBytes(4).toString('hex')}`;
  const file = await open(
    via(dir, temporary),
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o444,
  );
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
  try {
    await link(via(dir, temporary), via(dir, name));
  } catch (err) {
    if (codeOf(err) !== 'EEXIST') throw err;
  } finally {
    await unlink(via(dir, temporary)).catch(() => undefined);
  }
}

/** Complete packs (their index is written last) are re-indexed into the repository by git, then leave the store. */
async function bringPacksHome(
  root: FileHandle,
  commonDir: string,
  gitBinary: string,
  done: BroughtHome,
): Promise<void> {
  const dir = await openDirIfPresent(via(root, 'pack'));
  if (!dir) return;
  try {
    const names = await readdir(via(dir));
    for (const name of names) {
      const pack = PACK_FILE.exec(name);
      if (!pack || !names.includes(`pack-${pack[1]}.idx`)) continue;
      const data = await readRegularFile(via(dir, name));
      if (data === null) continue;
      if (!(await indexPack(commonDir, gitBinary, data))) {
        done.refused++;
        continue;
      }
      for (const part of names.filter((n) => n.startsWith(`pack-${pack[1]}.`)))
        await unlink(via(dir, part)).catch(() => undefined);
      done.packs++;
    }
  } finally {
    await dir.close();
  }
}

/** `git index-pack --stdin` in the repository: every object hashed by git, thin packs completed from the repository. */
function indexPack(commonDir: string, gitBinary: string, data: Buffer): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn(gitBinary, ['--git-dir', commonDir, 'index-pack', '--stdin', '--fix-thin'], {
      cwd: commonDir,
      env: gitEnvironment(commonDir),
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    child.once('error', reject);
    child.stdin.once('error', () => undefined); // git refused the data early: its exit status says so
    child.once('close', (code) => resolve(code === 0));
    child.stdin.end(data);
  });
}

/** The store of a worktree that is gone: its objects were brought home first (cleanup does both, in that order). */
export async function discardObjectStore(dataDir: string, worktreePath: string): Promise<void> {
  // No agent runs in it any more; rm never follows a link inside.
  await rm(objectStoreKeyDir(dataDir, worktreePath), { recursive: true, force: true });
}

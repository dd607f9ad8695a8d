/**
 * Bringing a worktree agent's object store (git/agent-objects.ts) home, into the repository's
 * own store: before the service reads the branch (git status, cleanup's merge check and
 * removal), when the agent ends and on each periodic check of running agents; an object brought
 * home leaves the store, where the agent still reads it through the alternate. The store is the
 * agent's to write, so nothing in it is trusted: it is read through git/untrusted-folder.ts,
 * every loose object's name is checked against the hash of its content, and packs are
 * re-indexed by git itself (`index-pack`, which hashes every object), never copied.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, mkdir, open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { inflate } from 'node:zlib';
import { objectStoreKeyDir, objectStoreOf, recordedCommonDir } from './agent-objects';
import { gitEnvironment } from './git-environment';
import { tracedGitProcess } from './command-span';
import { codeOf, openDirIfPresent, readRegularFile, via } from './untrusted-folder';

const inflateAsync = promisify(inflate);

const LOOSE_DIR = /^[0-9a-f]{2}$/;
const LOOSE_FILE = /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/;
const PACK_FILE = /^pack-([0-9a-f]{40}|[0-9a-f]{64})\.pack$/;
const HEADER = /^(blob|tree|commit|tag) (0|[1-9][0-9]*)$/;

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
  const commonDir = await recordedCommonDir(keyDir);
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
    const args = ['--git-dir', commonDir, 'index-pack', '--stdin', '--fix-thin'];
    const child = tracedGitProcess(args, () =>
      spawn(gitBinary, args, { cwd: commonDir, env: gitEnvironment(commonDir), stdio: ['pipe', 'ignore', 'ignore'] }),
    );
    child.once('error', reject);
    child.stdin.once('error', () => undefined); // git refused the data early: its exit status says so
    child.once('close', (code) => resolve(code === 0));
    child.stdin.end(data);
  });
}

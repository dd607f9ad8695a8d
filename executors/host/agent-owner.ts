/**
 * Who owns what an agent touches: the files of a workspace belong to its own uid (from
 * TWS_AGENT_UIDS), so that agents of different tasks cannot touch each other's files even through
 * a mistake in the mount table; everything of the service is out of their reach by permission as
 * well: the service's folders are traversable only where an agent's sandbox must bind something
 * below them (0711: no listing), and the rest of the data folder is the service's alone (0700/0600).
 */
import { createHash } from 'node:crypto';
import { chmodSync, lchownSync, lstatSync, mkdirSync, readdirSync, type Stats } from 'node:fs';
import { chmod, lchown, lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { processStarter } from '../../git/process-starter';
import { systemBinary } from './agent-sandbox';

/** The system's chown, by absolute path (never looked up on a PATH). */
const CHOWN = systemBinary('chown') ?? '/usr/bin/chown';

/**
 * A whole tree given to `uid`, links themselves and never what they point to (`-h`, `-P`): for a
 * tree the service made a moment ago (a new worktree) or wrote into (a restore).
 */
function giveTrees(folders: string[], uid: number): Promise<void> {
  // Through the process starter (git/process-starter.ts): a fork of this large process costs a
  // few milliseconds of CPU on every first start, one of the small helper a fraction of that.
  const started = processStarter().spawn(CHOWN, ['-R', '-h', '-P', `${uid}:${uid}`, '--', ...folders], {
    env: { PATH: '/usr/bin:/bin' },
    output: 'ignore',
  });
  return new Promise((resolve, reject) => {
    started.once('error', () => reject(new Error('the workspace could not be given to its agent uid')));
    started.once('exit', (code: number | null) =>
      code === 0 ? resolve() : reject(new Error('the workspace could not be given to its agent uid')),
    );
  });
}

/**
 * Trees given to `uid` as {@link giveTrees} gives them, except the files in `keep` (the pointers git
 * follows: a worktree's `.git` file, its registration's files, the task folder's marker), which
 * stay the service's at every moment: the service's git refuses a worktree whose pointers are not
 * its own, and a give runs while other steps may read the worktree (a second run of its launch
 * step, a git status). Each folder on the way to a kept file is given alone, the rest of its
 * entries whole; a link is given itself, never followed.
 */
export async function giveTreesExcept(folders: string[], uid: number, keep: string[]): Promise<void> {
  const whole: string[] = [];
  const alone: string[] = [];
  // The folders on the way to a kept file read synchronously (an lstat and a listing each).
  const visit = (entry: string): void => {
    if (keep.includes(entry)) return;
    if (!keep.some((file) => file.startsWith(`${entry}/`))) {
      whole.push(entry);
      return;
    }
    const st = unlessAbsent(() => lstatSync(entry));
    if (!st) return;
    if (!st.isDirectory()) {
      whole.push(entry);
      return;
    }
    alone.push(entry);
    for (const name of readdirSync(entry)) visit(path.join(entry, name));
  };
  folders.forEach(visit);
  await Promise.all([
    ...(whole.length > 0 ? [giveTrees(whole, uid)] : []),
    ...alone.map((folder) => lchown(folder, uid, uid)),
  ]);
}

/*
 * What runs before every sandboxed start is synchronous: a few dozen syscalls of microseconds each,
 * where as promises of the thread pool (four threads) each waited behind the others, and an attach
 * waited 3 ms for them.
 */

/** A folder of the agent's own (its home): made when missing, its alone (0700). */
export function agentFolder(folder: string, uid: number): void {
  mkdirSync(folder, { recursive: true });
  lchownSync(folder, uid, uid);
  chmodSync(folder, 0o700);
}

/** Files the agent may read and never write (the pointers git follows): the service's, 0644. */
export function serviceFiles(files: string[]): void {
  for (const file of files) {
    lchownSync(file, 0, 0);
    chmodSync(file, 0o644);
  }
}

/** Only the folders agents' sandboxes bind something below are traversable by others. */
const TRAVERSED = 0o711;

/**
 * The service's folders as agents may see them: the data folder, the agent root, the workspace
 * root, the log folder and the object stores' folder traversable (no listing), and every other
 * entry of the data folder the service's alone.
 * Folders that are not there are left alone. Run before every agent start (a few syscalls).
 */
export function closeServiceFolders(dirs: {
  dataDir: string;
  agentRoot: string;
  workspaceRoot: string;
  logDir: string;
}): void {
  const objects = path.join(dirs.agentRoot, 'agent-objects');
  const traversed = new Set([dirs.dataDir, dirs.agentRoot, dirs.workspaceRoot, dirs.logDir, objects]);
  for (const folder of traversed) unlessAbsent(() => chmodSync(folder, TRAVERSED));
  const entries = unlessAbsent(() => readdirSync(dirs.dataDir)) ?? [];
  for (const entry of entries.map((name) => path.join(dirs.dataDir, name))) {
    if (traversed.has(entry)) continue;
    const st = unlessAbsent(() => lstatSync(entry));
    if (!st || st.isSymbolicLink() || (st.mode & 0o077) === 0) continue;
    // Any failure but a file gone meanwhile stops the start: never an agent beside an open secret.
    unlessAbsent(() => chmodSync(entry, st.mode & 0o7700));
  }
}

/** A synchronous step whose path may be gone (undefined then); any other failure is thrown. */
function unlessAbsent<T>(step: () => T): T | undefined {
  try {
    return step();
  } catch (err) {
    return absentIsFine(err);
  }
}

/** A folder or file that is not there (yet, or any more) has nothing to close; any other failure is thrown. */
export function absentIsFine(err: unknown): undefined {
  if ((err as NodeJS.ErrnoException | null)?.code === 'ENOENT') return undefined;
  throw err;
}

/** The folders from `top` (exclusive) down to `folder` (inclusive), each made traversable (0711). */
export function traversable(top: string, folder: string): void {
  const relative = path.relative(top, folder);
  if (relative.startsWith('..') || path.isAbsolute(relative)) return;
  const parts = relative.split(path.sep).filter(Boolean);
  parts.forEach((_, i) => chmodSync(path.join(top, ...parts.slice(0, i + 1)), TRAVERSED));
}

/**
 * Whether another uid can reach each path (every folder above it searchable by others): the agent's
 * bubblewrap binds them as the agent's uid. Answers the first that cannot be reached, or null.
 */
export function unreachable(paths: string[]): string | null {
  const above = (p: string): string[] => {
    const folders: string[] = [];
    for (let at = path.dirname(path.resolve(p)); ; at = path.dirname(at)) {
      folders.push(at);
      if (path.dirname(at) === at) return folders;
    }
  };
  // Every folder above any of them read once (they share most of their ancestors).
  const closed = new Set<string>();
  for (const folder of new Set(paths.flatMap(above))) {
    const st: Stats | undefined = unlessAbsent(() => lstatSync(folder));
    if (st && st.isDirectory() && (st.mode & 0o001) === 0) closed.add(folder);
  }
  return paths.find((p) => above(p).some((folder) => closed.has(folder))) ?? null;
}

/** Where `make start` puts what agents' sandboxes bind when the data folder cannot be reached by them. */
const AGENT_ROOTS = '/var/lib/task-workspaces/agents';

/**
 * The agent root for a data folder below a folder other users cannot search (a clone in a `0700`
 * home, say): agents run as other uids and their sandbox could bind nothing there, so
 * their workspaces, logs and object stores go to `/var/lib/task-workspaces/agents/<hash of the
 * data folder>/` (root's, traversable by others, not listable). Null where the data folder is
 * reachable, or when this process is not root (it then runs no agent as another uid).
 */
export async function agentRootOutside(dataDir: string): Promise<string | null> {
  if (process.getuid?.() !== 0 || !unreachable([dataDir])) return null;
  const root = path.join(AGENT_ROOTS, createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16));
  await mkdir(root, { recursive: true, mode: 0o711 });
  for (const folder of ['/var/lib/task-workspaces', AGENT_ROOTS, root]) {
    const st = await lstat(folder);
    if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0)
      throw new Error(`${folder} must be a folder owned by root and writable by root alone: fix or remove it`);
  }
  await chmod(AGENT_ROOTS, TRAVERSED);
  await chmod(root, TRAVERSED);
  return root;
}

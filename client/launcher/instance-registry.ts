/**
 * The instances of the service on this host and the agent uids each gives its workspaces. Two
 * instances (two checkouts, two `make start`s) with the same TWS_AGENT_UIDS would give one uid to
 * a task of each: an agent of one would then own, and could write, the other's workspace files.
 * So each start records its instance's range in a registry of root's
 * (`/var/lib/task-workspaces/instances/<instanceId>.json`) and refuses one that overlaps another
 * instance's whose data folder is still there (its workspaces and their uids live on while it is
 * stopped); a registration whose data folder is gone is dropped. Checked and written under a lock
 * (an exclusive folder), so two starts at once cannot both pass.
 */
import { lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { UidRange } from '../../domain/agent-settings';

export const INSTANCE_REGISTRY = '/var/lib/task-workspaces/instances';

interface Registration {
  instanceId: string;
  dataDir: string;
  first: number;
  last: number;
}

const LOCK_WAIT_MS = 10_000;
/** A lock older than this was left by a start that died holding it. */
const LOCK_STALE_MS = 30_000;

async function withLock<T>(registry: string, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(registry, '.lock');
  for (const deadline = Date.now() + LOCK_WAIT_MS; ;) {
    try {
      await mkdir(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const held = await stat(lock).catch(() => null);
      if (held && Date.now() - held.mtimeMs > LOCK_STALE_MS) await rm(lock, { recursive: true, force: true });
      if (Date.now() > deadline)
        throw new Error(`the instance registry's lock ${lock} is held: remove it if no start runs`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

async function readRegistration(file: string): Promise<Registration | null> {
  try {
    const r = JSON.parse(await readFile(file, 'utf8')) as Registration;
    return typeof r.dataDir === 'string' && Number.isInteger(r.first) && Number.isInteger(r.last) ? r : null;
  } catch {
    return null;
  }
}

/**
 * Registers this instance's agent uids, or answers why it cannot (one line, for `start-up failed:`).
 * Not root: agents run as this user, no uid is given to anyone, nothing to register.
 */
export async function registerAgentUids(
  self: { instanceId: string; dataDir: string; agentUids: UidRange },
  registry = INSTANCE_REGISTRY,
): Promise<string | null> {
  if (process.getuid?.() !== 0) return null;
  await mkdir(registry, { recursive: true, mode: 0o700 });
  const st = await lstat(registry);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0)
    return `${registry} must be a folder owned by root and writable by root alone: fix or remove it`;
  const dataDir = path.resolve(self.dataDir);
  return withLock(registry, async () => {
    for (const name of await readdir(registry)) {
      if (!name.endsWith('.json') || name === `${self.instanceId}.json`) continue;
      const other = await readRegistration(path.join(registry, name));
      if (!other) continue;
      // Gone with its data folder: its workspaces and their uids are gone too. A folder that cannot
      // be read for another reason is taken as there (its uids stay its own).
      const gone = await stat(other.dataDir).then(
        () => false,
        (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
      );
      if (gone) {
        await rm(path.join(registry, name), { force: true });
        continue;
      }
      if (other.dataDir === dataDir) continue; // this data folder under an older instance id
      if (other.first <= self.agentUids.last && self.agentUids.first <= other.last) {
        const next = Math.max(other.last, self.agentUids.last) + 1;
        return (
          `the agent uids ${self.agentUids.first}-${self.agentUids.last} overlap those of another instance on this host ` +
          `(data folder ${other.dataDir}, uids ${other.first}-${other.last}): an agent of one could write the other's ` +
          `workspaces. Give this one a range of its own, e.g. TWS_AGENT_UIDS=${next}-${next + 99_999}`
        );
      }
    }
    const mine: Registration = {
      instanceId: self.instanceId,
      dataDir,
      first: self.agentUids.first,
      last: self.agentUids.last,
    };
    const file = path.join(registry, `${self.instanceId}.json`);
    await writeFile(`${file}.tmp`, JSON.stringify(mine), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
    return null;
  });
}

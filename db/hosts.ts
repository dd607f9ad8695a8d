/**
 * Executor hosts: each worker's record (heartbeat, workspace root, executors), and where a task's
 * work is placed: on the host of its repositories.
 */
import { HOST_DISK_COLUMNS, hostDiskOf, type HostDisk, type HostDiskColumns } from './disk';
import type { Db } from './pool';

/** A host is live while its last heartbeat is younger than this many of its own intervals. */
const LIVE_WITHIN_INTERVALS = 3;
/** Whether a `hosts` row is live, as SQL: for a statement that reads liveness beside its own work (db/cleanup-jobs.ts). */
export const LIVE = `last_seen_at > now() - make_interval(secs => ${LIVE_WITHIN_INTERVALS} * heartbeat_every_ms / 1000.0)`;

export interface HostRecord {
  hostId: string;
  workspaceRoot: string;
  version: string;
  executors: string[];
  heartbeatEveryMs: number;
  /** Whether it can run containers now (the `container` executor), as its worker found it at this beat. */
  containers?: HostContainers;
}

interface HostContainers {
  available: boolean;
  engine: string | null;
  reason?: string;
}

export interface HostView extends HostDisk {
  hostId: string;
  live: boolean;
  lastSeenAt: string;
  workspaceRoot: string;
  executors: string[];
  version: string;
  containers: HostContainers;
}

/**
 * The host says it is alive (at start and every interval). The first host of a deployment, while
 * it is the only one, adopts the repositories registered before hosts were records.
 */
export async function registerHost(db: Db, host: HostRecord): Promise<void> {
  await db.query(
    `INSERT INTO hosts (host_id, workspace_root, version, executors, heartbeat_every_ms, containers) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (host_id) DO UPDATE SET workspace_root = EXCLUDED.workspace_root, version = EXCLUDED.version,
       executors = EXCLUDED.executors, heartbeat_every_ms = EXCLUDED.heartbeat_every_ms, last_seen_at = now(),
       containers = EXCLUDED.containers`,
    [
      host.hostId,
      host.workspaceRoot,
      host.version,
      host.executors,
      host.heartbeatEveryMs,
      host.containers ? JSON.stringify(host.containers) : null,
    ],
  );
  await db.query(`UPDATE repositories SET host_id = $1 WHERE host_id IS NULL AND (SELECT count(*) FROM hosts) = 1`, [
    host.hostId,
  ]);
}

/** One page of hosts by id, after `afterHostId` (keyset). */
export async function listHosts(db: Db, limit: number, afterHostId: string | null): Promise<HostView[]> {
  const res = await db.query<HostRow>(
    `SELECT ${HOST_COLUMNS} FROM hosts WHERE $2::text IS NULL OR host_id > $2 ORDER BY host_id LIMIT $1`,
    [limit, afterHostId],
  );
  return res.rows.map(hostViewOf);
}

/** One host's view; null when no host of this id ever registered. */
export async function findHost(db: Db, hostId: string): Promise<HostView | null> {
  const row = (await db.query<HostRow>(`SELECT ${HOST_COLUMNS} FROM hosts WHERE host_id = $1`, [hostId])).rows[0];
  return row ? hostViewOf(row) : null;
}

type HostRow = HostDiskColumns & {
  host_id: string;
  live: boolean;
  last_seen_at: Date;
  workspace_root: string;
  executors: string[];
  version: string;
  containers: HostContainers | null;
};

const HOST_COLUMNS = `host_id, ${LIVE} AS live, last_seen_at, workspace_root, executors, version, containers, ${HOST_DISK_COLUMNS}`;

function hostViewOf(r: HostRow): HostView {
  return {
    hostId: r.host_id,
    live: r.live,
    lastSeenAt: r.last_seen_at.toISOString(),
    workspaceRoot: r.workspace_root,
    executors: r.executors,
    version: r.version,
    containers: r.containers ?? { available: false, engine: null, reason: 'not_reported' },
    ...hostDiskOf(r),
  };
}

/** A host as its liveness and load gauges read it. */
interface HostVitals {
  hostId: string;
  live: boolean;
  /** Seconds since its last heartbeat, by the database's clock (the one that wrote it). */
  heartbeatAgeSeconds: number;
  /** Agent processes recorded running there. */
  agentsRunning: number;
}

/** Every host's vitals in one statement (the running count reads the partial index of running executions). */
export async function hostVitals(db: Db, limit = 10_000): Promise<HostVitals[]> {
  const res = await db.query<{ host_id: string; live: boolean; age: number; agents: number }>(
    `SELECT h.host_id, ${LIVE} AS live, extract(epoch FROM now() - h.last_seen_at)::float8 AS age,
       (SELECT count(*)::int FROM executions e WHERE e.host_id = h.host_id AND e.status = 'running') AS agents
       FROM hosts h ORDER BY h.host_id LIMIT $1`,
    [limit],
  );
  return res.rows.map((r) => ({
    hostId: r.host_id,
    live: r.live,
    heartbeatAgeSeconds: Math.max(0, r.age),
    agentsRunning: r.agents,
  }));
}

/** The live hosts' ids. */
export async function liveHostIds(db: Db): Promise<string[]> {
  return (await db.query<{ host_id: string }>(`SELECT host_id FROM hosts WHERE ${LIVE} ORDER BY host_id`)).rows.map(
    (r) => r.host_id,
  );
}

/** `live` or `down` for a host with a record; `unknown` for one that never registered. */
export async function hostLiveness(db: Db, hostId: string): Promise<'live' | 'down' | 'unknown'> {
  const row = (await db.query<{ live: boolean }>(`SELECT ${LIVE} AS live FROM hosts WHERE host_id = $1`, [hostId]))
    .rows[0];
  return row ? (row.live ? 'live' : 'down') : 'unknown';
}

/** The workspace root a host registered, if it did. */
export async function hostWorkspaceRoot(db: Db, hostId: string): Promise<string | null> {
  return (
    (await db.query<{ workspace_root: string }>('SELECT workspace_root FROM hosts WHERE host_id = $1', [hostId]))
      .rows[0]?.workspace_root ?? null
  );
}

/** The distinct hosts of these repositories (null: one registered before hosts and not yet adopted). */
export async function repositoryHosts(db: Db, repositoryIds: string[]): Promise<(string | null)[]> {
  const res = await db.query<{ host_id: string | null }>(
    'SELECT DISTINCT host_id FROM repositories WHERE id = ANY($1::uuid[])',
    [repositoryIds],
  );
  return res.rows.map((r) => r.host_id);
}

/**
 * The host a task's work runs on: the host of its canonical environment's owner's repositories
 * (a borrowed environment is where its owner's repositories are), else of its own; null when none
 * says (no repository, or only ones from before hosts).
 */
export async function taskHost(db: Db, taskId: string): Promise<string | null> {
  const res = await db.query<{ host_id: string | null }>(
    `WITH RECURSIVE chain(id, depth) AS (
       SELECT id, 0 FROM tasks WHERE id = $1
       UNION ALL SELECT t.parent_task_id, c.depth + 1 FROM chain c JOIN tasks t ON t.id = c.id
        WHERE t.workspace_mode = 'inherit_parent' AND t.parent_task_id IS NOT NULL AND c.depth < 32)
     SELECT r.host_id FROM chain c JOIN task_repositories tr ON tr.task_id = c.id JOIN repositories r ON r.id = tr.repository_id
      WHERE r.host_id IS NOT NULL ORDER BY c.depth LIMIT 1`,
    [taskId],
  );
  return res.rows[0]?.host_id ?? null;
}

/** The host of an environment that exists for the task already (its work stays where its files are). */
export async function environmentHostOfSession(db: Db, sessionId: string): Promise<string | null> {
  const res = await db.query<{ host_id: string }>(
    'SELECT e.host_id FROM sessions s JOIN task_environments e ON e.id = s.environment_id WHERE s.id = $1',
    [sessionId],
  );
  return res.rows[0]?.host_id ?? null;
}

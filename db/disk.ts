/**
 * Disk as the hosts measured it [R6.11]: the bytes of each workspace (environment_disk) and the
 * free and total bytes of each host's workspace root (hosts.disk_*). Written by each host's
 * worker in the background (worker/disk-measurement.ts), read by the task and host views, the
 * metrics and `tws disk`; never measured on a request's path.
 */
import { overDiskQuota } from '../domain/disk';
import type { Db } from './pool';

/** A workspace a host holds and measures: its folder, and the SSH target it is on (null: this host). */
export interface MeasuredWorkspace {
  environmentId: string;
  workspacePath: string;
  sshTargetId: string | null;
}

/**
 * The workspaces this host made and holds: worktrees and SSH clones that are materialized. A
 * `local` environment's workspace is its source checkout, which the service never made.
 * `unmeasuredOnly`: those with no figure yet (made since the last round reached them).
 * `environmentIds`: only those (the limit check's, whose agents run): a host can hold tens of
 * thousands of workspaces, and reading them all every second to keep a few kept the worker's
 * heap churning (bench scenario 13 after the growth scenario's 100,000 environments on its host).
 */
export async function workspacesToMeasure(
  db: Db,
  hostId: string,
  opts: { unmeasuredOnly?: boolean; environmentIds?: string[] } = {},
): Promise<MeasuredWorkspace[]> {
  const res = await db.query<{ id: string; workspace_path: string; ssh_target_id: string | null }>(
    `SELECT e.id, e.workspace_path, e.ssh_target_id FROM task_environments e
      WHERE e.host_id = $1 AND e.materialized AND e.workspace_path IS NOT NULL AND e.executor_type <> 'local'
        AND e.status IN ('ready', 'stopped')
        AND (NOT $2 OR NOT EXISTS (SELECT 1 FROM environment_disk d WHERE d.environment_id = e.id))
        AND ($3::uuid[] IS NULL OR e.id = ANY($3::uuid[]))
      ORDER BY e.id`,
    [hostId, opts.unmeasuredOnly ?? false, opts.environmentIds ?? null],
  );
  return res.rows.map((r) => ({ environmentId: r.id, workspacePath: r.workspace_path, sshTargetId: r.ssh_target_id }));
}

/** One workspace's figure, measured on its own (the disk quota's check of workspaces whose agents run). */
export async function recordEnvironmentDisk(
  db: Db,
  m: { environmentId: string; hostId: string; bytes: number },
): Promise<void> {
  await db.query(
    `INSERT INTO environment_disk (environment_id, host_id, bytes, measured_at)
     SELECT $1, $2, $3, now() WHERE EXISTS (SELECT 1 FROM task_environments e WHERE e.id = $1)
     ON CONFLICT (environment_id) DO UPDATE SET host_id = EXCLUDED.host_id, bytes = EXCLUDED.bytes, measured_at = EXCLUDED.measured_at`,
    [m.environmentId, m.hostId, m.bytes],
  );
}

export interface HostDiskMeasurement {
  hostId: string;
  freeBytes: number;
  totalBytes: number;
  minFreeBytes: number;
  /** Each measured workspace's bytes; a workspace that could not be measured keeps its last figure. */
  workspaces: { environmentId: string; bytes: number }[];
  measuredAt: Date;
}

/**
 * One measurement of a host, in one transaction: its workspaces' figures, those of workspaces it
 * no longer holds forgotten (released, removed, moved), and its filesystem with the sum.
 */
export async function recordHostDisk(db: Db, m: HostDiskMeasurement): Promise<void> {
  await db.query(
    `WITH measured AS (
       SELECT * FROM unnest($2::uuid[], $3::bigint[]) AS m(environment_id, bytes)
        WHERE EXISTS (SELECT 1 FROM task_environments e WHERE e.id = m.environment_id)
     ), written AS (
       INSERT INTO environment_disk (environment_id, host_id, bytes, measured_at)
       SELECT environment_id, $1, bytes, $4 FROM measured
       ON CONFLICT (environment_id) DO UPDATE SET host_id = EXCLUDED.host_id, bytes = EXCLUDED.bytes,
         measured_at = EXCLUDED.measured_at
       RETURNING environment_id
     )
     DELETE FROM environment_disk d
      WHERE d.host_id = $1 AND d.environment_id NOT IN (SELECT environment_id FROM written)
        AND NOT EXISTS (
          SELECT 1 FROM task_environments e
           WHERE e.id = d.environment_id AND e.host_id = $1 AND e.materialized AND e.status IN ('ready', 'stopped'))`,
    [m.hostId, m.workspaces.map((w) => w.environmentId), m.workspaces.map((w) => w.bytes), m.measuredAt],
  );
  await db.query(
    `UPDATE hosts SET disk_free_bytes = $2, disk_total_bytes = $3, disk_min_free_bytes = $4, disk_measured_at = $5,
       disk_workspace_bytes = (SELECT coalesce(sum(bytes), 0) FROM environment_disk WHERE host_id = $1)
      WHERE host_id = $1`,
    [m.hostId, m.freeBytes, m.totalBytes, m.minFreeBytes, m.measuredAt],
  );
}

/** A task's workspace on disk as last measured: its environment's (shared ones count for each task using them). */
export async function environmentDisk(
  db: Db,
  environmentId: string,
): Promise<{ bytes: number; measuredAt: string } | null> {
  const row = (
    await db.query<{ bytes: string; measured_at: Date }>(
      'SELECT bytes, measured_at FROM environment_disk WHERE environment_id = $1',
      [environmentId],
    )
  ).rows[0];
  return row ? { bytes: Number(row.bytes), measuredAt: row.measured_at.toISOString() } : null;
}

/**
 * Whether an environment's workspace, as last measured, is over its owner task's disk quota (its
 * own, else `defaultQuota`). Judged against the quota now: a raised quota lets it launch again.
 */
export async function environmentOverQuota(
  db: Db,
  environmentId: string,
  defaultQuota: number | null,
): Promise<boolean> {
  const row = (
    await db.query<{ bytes: string; disk_quota_bytes: string | null }>(
      `SELECT d.bytes, t.disk_quota_bytes FROM environment_disk d
         JOIN task_environments e ON e.id = d.environment_id JOIN tasks t ON t.id = e.task_id
        WHERE d.environment_id = $1`,
      [environmentId],
    )
  ).rows[0];
  if (!row) return false;
  return overDiskQuota(
    Number(row.bytes),
    row.disk_quota_bytes === null ? null : Number(row.disk_quota_bytes),
    defaultQuota,
  );
}

/** The host's filesystem and workspaces as last measured, and whether its free space is under its minimum. */
export interface HostDisk {
  disk: { freeBytes: number; totalBytes: number; workspaceBytes: number; measuredAt: string } | null;
  lowDisk: boolean;
}

export interface HostDiskColumns {
  disk_free_bytes: string | null;
  disk_total_bytes: string | null;
  disk_workspace_bytes: string | null;
  disk_min_free_bytes: string | null;
  disk_measured_at: Date | null;
}

export const HOST_DISK_COLUMNS =
  'disk_free_bytes, disk_total_bytes, disk_workspace_bytes, disk_min_free_bytes, disk_measured_at';

export function hostDiskOf(row: HostDiskColumns): HostDisk {
  if (row.disk_measured_at === null || row.disk_free_bytes === null || row.disk_total_bytes === null)
    return { disk: null, lowDisk: false };
  const freeBytes = Number(row.disk_free_bytes);
  return {
    disk: {
      freeBytes,
      totalBytes: Number(row.disk_total_bytes),
      workspaceBytes: Number(row.disk_workspace_bytes ?? 0),
      measuredAt: row.disk_measured_at.toISOString(),
    },
    lowDisk: freeBytes < Number(row.disk_min_free_bytes ?? 0),
  };
}

/** The largest workspaces of a host, each with the task that owns its environment. */
export async function largestWorkspaces(
  db: Db,
  hostId: string,
  limit: number,
): Promise<{ taskId: string; environmentId: string; bytes: number; measuredAt: string }[]> {
  const res = await db.query<{ task_id: string; environment_id: string; bytes: string; measured_at: Date }>(
    `SELECT e.task_id, d.environment_id, d.bytes, d.measured_at
       FROM environment_disk d JOIN task_environments e ON e.id = d.environment_id
      WHERE d.host_id = $1 ORDER BY d.bytes DESC, d.environment_id LIMIT $2`,
    [hostId, limit],
  );
  return res.rows.map((r) => ({
    taskId: r.task_id,
    environmentId: r.environment_id,
    bytes: Number(r.bytes),
    measuredAt: r.measured_at.toISOString(),
  }));
}

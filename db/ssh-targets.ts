/** SSH executor targets as records: the transport's SshTarget, plus its name, its service host and when it was registered. */
import type { SshTarget } from '../ssh/connection';
import { newestFirst, type PageOf } from './keyset';
import { isCheckViolation, isForeignKeyViolation, type Db } from './pool';

export interface SshTargetRecord extends SshTarget {
  name: string;
  /** The service host whose worker holds the private key and talks to the target. */
  hostId: string;
  createdAt: string;
}

interface SshTargetRow {
  id: string;
  name: string;
  host: string;
  port: number;
  username: string;
  private_key_path: string;
  known_hosts: string;
  workspace_root: string;
  host_id: string;
  created_at: Date;
}

const COLUMNS = 'id, name, host, port, username, private_key_path, known_hosts, workspace_root, host_id, created_at';

const record = (row: SshTargetRow): SshTargetRecord => ({
  id: row.id,
  name: row.name,
  host: row.host,
  port: row.port,
  user: row.username,
  privateKeyPath: row.private_key_path,
  knownHosts: row.known_hosts,
  workspaceRoot: row.workspace_root,
  hostId: row.host_id,
  createdAt: row.created_at.toISOString(),
});

/** Stores a target (a taken name is the unique violation of `name`). */
export async function insertSshTarget(db: Db, target: Omit<SshTargetRecord, 'createdAt'>): Promise<SshTargetRecord> {
  const res = await db.query<SshTargetRow>(
    `INSERT INTO ssh_targets (id, name, host, port, username, private_key_path, known_hosts, workspace_root, host_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
    [
      target.id,
      target.name,
      target.host,
      target.port,
      target.user,
      target.privateKeyPath,
      target.knownHosts,
      target.workspaceRoot,
      target.hostId,
    ],
  );
  return record(res.rows[0]!);
}

export async function getSshTarget(db: Db, id: string): Promise<SshTargetRecord | null> {
  const row = (await db.query<SshTargetRow>(`SELECT ${COLUMNS} FROM ssh_targets WHERE id = $1`, [id])).rows[0];
  return row ? record(row) : null;
}

/** Targets, newest first, a keyset page at a time. */
export async function listSshTargets(db: Db, page: PageOf): Promise<(SshTargetRecord & { exact_at: string })[]> {
  const rows = await newestFirst<SshTargetRow>(
    db,
    { columns: COLUMNS, table: 'ssh_targets', time: 'created_at', key: 'id', keyType: 'uuid' },
    page,
  );
  return rows.map((row) => ({ ...record(row), exact_at: row.exact_at }));
}

/**
 * The rows that still need a target as it is: its environments, and the inventory rows of clones
 * not yet removed (`deleted` ones are history: removing the target clears it on them).
 */
const IN_USE = `EXISTS (SELECT 1 FROM task_environments e WHERE e.ssh_target_id = $1)
  OR EXISTS (SELECT 1 FROM environment_repos r WHERE r.ssh_target_id = $1 AND r.status <> 'deleted')`;

/** What may change after registration; the name, the host holding the key and the id stay. */
export type SshTargetChange = Pick<
  SshTargetRecord,
  'host' | 'port' | 'user' | 'privateKeyPath' | 'knownHosts' | 'workspaceRoot'
>;

/**
 * Writes a checked change. A new workspace root is written only while no environment or inventory
 * row uses the target (`in_use` otherwise: their paths are under the old one); null when it is gone.
 */
export async function updateSshTarget(
  db: Db,
  before: SshTargetRecord,
  change: SshTargetChange,
): Promise<SshTargetRecord | 'in_use' | null> {
  const moved = change.workspaceRoot !== before.workspaceRoot;
  const res = await db.query<SshTargetRow>(
    `UPDATE ssh_targets SET host = $2, port = $3, username = $4, private_key_path = $5, known_hosts = $6, workspace_root = $7
     WHERE id = $1 AND NOT ($8 AND (${IN_USE}))
     RETURNING ${COLUMNS}`,
    [
      before.id,
      change.host,
      change.port,
      change.user,
      change.privateKeyPath,
      change.knownHosts,
      change.workspaceRoot,
      moved,
    ],
  );
  if (res.rows[0]) return record(res.rows[0]);
  return (await getSshTarget(db, before.id)) ? 'in_use' : null;
}

/**
 * Removes a target no environment or inventory row names: `in_use` otherwise (the foreign keys
 * refuse one that a launch recorded meanwhile too), `not_found` when there is none.
 */
export async function deleteSshTarget(db: Db, id: string): Promise<'deleted' | 'in_use' | 'not_found'> {
  try {
    const res = await db.query(`DELETE FROM ssh_targets WHERE id = $1 AND NOT (${IN_USE})`, [id]);
    if (res.rowCount === 1) return 'deleted';
  } catch (err) {
    // A launch recorded an environment (or a clone) on it meanwhile: the foreign keys and the
    // inventory's identity check refuse to leave that row without its target.
    if (isForeignKeyViolation(err) || isCheckViolation(err)) return 'in_use';
    throw err;
  }
  return (await getSshTarget(db, id)) ? 'in_use' : 'not_found';
}

/** SSH executor targets as records: the transport's SshTarget, plus its name, its service host and when it was registered. */
import type { SshTarget } from '../ssh/connection';
import { newestFirst, type PageOf } from './keyset';
import type { Db } from './pool';

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

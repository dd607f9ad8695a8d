/** Repositories and boards: the catalogue tasks refer to. */
import { DEFAULT_REBUILDABLE } from '../domain/rebuildable';
import type { SetupFailure } from '../domain/workspace-setup';
import { newestFirst, type PageOf } from './keyset';
import type { Db } from './pool';

export interface RepositoryRow {
  id: string;
  name: string;
  path: string;
  default_branch: string;
  /** Null only for a repository registered before hosts were records, whose host is not known yet. */
  host_id?: string | null;
  /** The default branch's root commit at registration (its identity); null for one registered before. */
  root_commit?: string | null;
}

/** A repository as its views show it (never its path); `rebuildable` null: the default list; `copy_files` null: none. */
export interface RepositoryViewRow {
  id: string;
  name: string;
  default_branch: string;
  rebuildable: string[] | null;
  setup: string[] | null;
  copy_files: string[] | null;
  setup_failure: SetupFailure;
  /** Where its branches are pushed (a remote name or a URL without credentials); null: none [R8.6]. */
  remote: string | null;
  /** The merge strategies it allows; null: all of them. */
  merge_strategies: string[] | null;
}

const VIEW_COLUMNS =
  'id, name, default_branch, rebuildable, setup, copy_files, setup_failure, remote, merge_strategies';

/** A jsonb list as a query parameter: null (and an empty `copy_files`) stays null, none. */
const jsonList = (list: string[] | null | undefined): string | null =>
  list === null || list === undefined ? null : JSON.stringify(list);

export async function insertRepository(
  db: Db,
  row: RepositoryRow & {
    host_id: string;
    rebuildable?: string[] | null;
    setup?: string[] | null;
    copy_files?: string[] | null;
    setup_failure?: SetupFailure;
    remote?: string | null;
    merge_strategies?: string[] | null;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO repositories (id, name, path, default_branch, host_id, root_commit, rebuildable, setup, copy_files, setup_failure,
                               remote, merge_strategies)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12)`,
    [
      row.id,
      row.name,
      row.path,
      row.default_branch,
      row.host_id,
      row.root_commit ?? null,
      row.rebuildable ?? null,
      jsonList(row.setup),
      jsonList(row.copy_files?.length ? row.copy_files : null),
      row.setup_failure ?? 'warn',
      row.remote ?? null,
      row.merge_strategies ?? null,
    ],
  );
}

/** The repository's patterns of rebuilt ignored files (domain/rebuildable.ts): its own, or the default list. */
export async function rebuildableOf(db: Db, repositoryId: string): Promise<readonly string[]> {
  const res = await db.query<{ rebuildable: string[] | null }>('SELECT rebuildable FROM repositories WHERE id = $1', [
    repositoryId,
  ]);
  return res.rows[0]?.rebuildable ?? DEFAULT_REBUILDABLE;
}

/**
 * For each owner task, the repositories its workspace holds and the patterns of ignored files a
 * release of it leaves out (their own, or the default list): what an idle release's answer says
 * before any save runs. In the order the workspace lists its repositories.
 */
export async function rebuildableOfWorkspaces(
  db: Db,
  ownerTaskIds: string[],
): Promise<Map<string, { repositoryId: string; patterns: readonly string[] }[]>> {
  const res = await db.query<{ task_id: string; repository_id: string; rebuildable: string[] | null }>(
    `SELECT DISTINCT ON (e.task_id, er.repository_id) e.task_id, er.repository_id, r.rebuildable, er.position
       FROM task_environments e
       JOIN environment_repos er ON er.environment_id = e.id AND er.worktree_path IS NOT NULL
       JOIN repositories r ON r.id = er.repository_id
      WHERE e.task_id = ANY($1::uuid[])
      ORDER BY e.task_id, er.repository_id, er.position`,
    [ownerTaskIds],
  );
  const byTask = new Map<string, { repositoryId: string; patterns: readonly string[] }[]>();
  for (const row of res.rows)
    byTask.set(row.task_id, [
      ...(byTask.get(row.task_id) ?? []),
      { repositoryId: row.repository_id, patterns: row.rebuildable ?? DEFAULT_REBUILDABLE },
    ]);
  return byTask;
}

export async function repositoryView(db: Db, id: string): Promise<RepositoryViewRow | null> {
  const res = await db.query<RepositoryViewRow>(`SELECT ${VIEW_COLUMNS} FROM repositories WHERE id = $1`, [id]);
  return res.rows[0] ?? null;
}

/**
 * What a `PATCH /v1/repositories/:id` changes; a field left out (undefined) stays as it is.
 * `rebuildable` null: back to the default list; `setup` or `copyFiles` null (or `copyFiles` empty): none.
 */
export interface RepositoryChange {
  rebuildable?: string[] | null;
  setup?: string[] | null;
  copyFiles?: string[] | null;
  setupFailure?: SetupFailure;
  /** null: none. */
  remote?: string | null;
  /** null: all strategies. */
  mergeStrategies?: string[] | null;
}

/** Changes the repository in one statement (nothing when the change is empty); false when there is no such repository. */
export async function updateRepository(db: Db, id: string, change: RepositoryChange): Promise<boolean> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  const set = (column: string, value: unknown, cast = '') => {
    values.push(value);
    sets.push(`${column} = $${values.length}${cast}`);
  };
  if (change.rebuildable !== undefined) set('rebuildable', change.rebuildable);
  if (change.setup !== undefined) set('setup', jsonList(change.setup), '::jsonb');
  if (change.copyFiles !== undefined)
    set('copy_files', jsonList(change.copyFiles?.length ? change.copyFiles : null), '::jsonb');
  if (change.setupFailure !== undefined) set('setup_failure', change.setupFailure);
  if (change.remote !== undefined) set('remote', change.remote);
  if (change.mergeStrategies !== undefined) set('merge_strategies', change.mergeStrategies);
  const res =
    sets.length === 0
      ? await db.query('SELECT 1 FROM repositories WHERE id = $1', values)
      : await db.query(`UPDATE repositories SET ${sets.join(', ')} WHERE id = $1`, values);
  return res.rowCount === 1;
}

export async function findRepositories(db: Db, ids: string[]): Promise<RepositoryRow[]> {
  const res = await db.query<RepositoryRow>(
    'SELECT id, name, path, default_branch, host_id FROM repositories WHERE id = ANY($1::uuid[])',
    [ids],
  );
  return res.rows;
}

export async function insertBoard(db: Db, id: string, name: string): Promise<void> {
  await db.query('INSERT INTO boards (id, name) VALUES ($1, $2)', [id, name]);
}

export async function boardExists(db: Db, id: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM boards WHERE id = $1', [id])).rowCount === 1;
}

/** Repositories, newest first; never their path (no answer of the API shows where a repository lives). */
export async function listRepositories(db: Db, page: PageOf) {
  return newestFirst<RepositoryViewRow>(
    db,
    {
      columns: VIEW_COLUMNS,
      table: 'repositories',
      time: 'created_at',
      key: 'id',
      keyType: 'uuid',
    },
    page,
  );
}

export async function listBoards(db: Db, page: PageOf) {
  return newestFirst<{ id: string; name: string }>(
    db,
    { columns: 'id, name', table: 'boards', time: 'created_at', key: 'id', keyType: 'uuid' },
    page,
  );
}

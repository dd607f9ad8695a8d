/**
 * An environment's inventory (environment_repos): per repository slot, the worktree or remote
 * clone it has, one active row each. The merge rule is domain/inventory.ts; the rows are
 * published with `ready` by db/environments.ts publishReady.
 */
import type { ExecutorType } from '../domain/admission';
import { mergeInventoryRow, type InventoryFields } from '../domain/inventory';
import type { Db } from './pool';

export interface InventoryRow {
  id: string;
  repository_id: string;
  branch_slug: string;
  executor_type: ExecutorType;
  worktree_id: string | null;
  worktree_path: string | null;
  worktree_branch: string | null;
  head_commit: string | null;
  position: number;
  status: 'active' | 'retained' | 'deleted';
  error: string | null;
  /** What the step that published the row made itself (migration 031); null: recorded before, unknown. */
  made_branch?: boolean | null;
  made_worktree?: boolean | null;
}

export async function inventoryOf(
  db: Db,
  environmentId: string,
  status: InventoryRow['status'] | null = 'active',
): Promise<InventoryRow[]> {
  const res = await db.query<InventoryRow>(
    `SELECT id, repository_id, branch_slug, executor_type, worktree_id, worktree_path, worktree_branch, head_commit, position, status, error
       FROM environment_repos WHERE environment_id = $1 AND ($2::text IS NULL OR status = $2) ORDER BY position, created_at`,
    [environmentId, status],
  );
  return res.rows;
}

export interface IncomingInventoryRow extends InventoryFields {
  id: string;
  repositoryId: string;
  branchSlug: string;
  executorType: ExecutorType;
  /** `ssh`: the target the row's remote path is on. */
  sshTargetId?: string | null;
}

/** Writes one slot's active row, applying the merge rule [R4] to what is already recorded. */
export async function upsertInventoryRow(db: Db, environmentId: string, incoming: IncomingInventoryRow): Promise<void> {
  const existing = await db.query<InventoryRow>(
    `SELECT id, repository_id, branch_slug, executor_type, worktree_id, worktree_path, worktree_branch, head_commit, position, status, error,
            made_branch, made_worktree
       FROM environment_repos WHERE environment_id = $1 AND repository_id = $2 AND branch_slug = $3 AND status = 'active' FOR UPDATE`,
    [environmentId, incoming.repositoryId, incoming.branchSlug],
  );
  const current = existing.rows[0];
  const merged = mergeInventoryRow(
    current
      ? {
          // A remote row has no host worktree id: its remote path and branch are its identity.
          identity:
            current.worktree_path && current.worktree_branch
              ? {
                  worktreeId: current.worktree_id,
                  worktreePath: current.worktree_path,
                  worktreeBranch: current.worktree_branch,
                  ...(current.made_branch != null && current.made_worktree != null
                    ? { made: { branch: current.made_branch, worktree: current.made_worktree } }
                    : {}),
                }
              : null,
          headCommit: current.head_commit,
          position: current.position,
          error: current.error,
        }
      : null,
    incoming,
  );
  const values = [
    merged.identity?.worktreeId ?? null,
    merged.identity?.worktreePath ?? null,
    merged.identity?.worktreeBranch ?? null,
    merged.headCommit,
    merged.position,
    merged.error,
    merged.identity?.made?.branch ?? null,
    merged.identity?.made?.worktree ?? null,
  ];
  if (current) {
    await db.query(
      `UPDATE environment_repos SET worktree_id = $2, worktree_path = $3, worktree_branch = $4, head_commit = $5, position = $6, error = $7,
              made_branch = $8, made_worktree = $9, updated_at = now()
        WHERE id = $1`,
      [current.id, ...values],
    );
  } else {
    await db.query(
      `INSERT INTO environment_repos (id, environment_id, repository_id, branch_slug, executor_type, worktree_id, worktree_path, worktree_branch, head_commit, position, error,
                                      made_branch, made_worktree, ssh_target_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
      [
        incoming.id,
        environmentId,
        incoming.repositoryId,
        incoming.branchSlug,
        incoming.executorType,
        ...values,
        incoming.sshTargetId ?? null,
      ],
    );
  }
}

/** For each requested slot, how many active inventory rows it has (1 each = complete [R1.1]). */
export async function activeRowsPerSlot(
  db: Db,
  environmentId: string,
  slots: { repositoryId: string; branchSlug: string }[],
): Promise<number[]> {
  if (slots.length === 0) return [];
  const res = await db.query<{ repository_id: string; branch_slug: string; n: number }>(
    `SELECT repository_id, branch_slug, count(*)::int AS n FROM environment_repos
      WHERE environment_id = $1 AND status = 'active' GROUP BY repository_id, branch_slug`,
    [environmentId],
  );
  return slots.map(
    (slot) => res.rows.find((r) => r.repository_id === slot.repositoryId && r.branch_slug === slot.branchSlug)?.n ?? 0,
  );
}

/** The active rows with a worktree identity of an environment, while this session is its materializer. */
export async function inventoryPublishedBy(
  db: Db,
  environmentId: string,
  materializerSessionId: string,
): Promise<InventoryRow[]> {
  const res = await db.query<InventoryRow>(
    `SELECT r.id, r.repository_id, r.branch_slug, r.executor_type, r.worktree_id, r.worktree_path, r.worktree_branch, r.head_commit, r.position, r.status, r.error,
            r.made_branch, r.made_worktree
       FROM environment_repos r JOIN task_environments e ON e.id = r.environment_id
      WHERE e.id = $1 AND e.materializer_session_id = $2 AND r.status = 'active' AND r.worktree_id IS NOT NULL ORDER BY r.position`,
    [environmentId, materializerSessionId],
  );
  return res.rows;
}

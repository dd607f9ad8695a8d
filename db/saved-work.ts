/**
 * Uncommitted work a removal saved on a hidden ref before it removed the worktree: recorded when
 * the ref is written, listed per repository, newest first.
 */
import { RESTORED_TRIGGERS } from '../domain/saved-work';
import { newestFirst, type PageOf } from './keyset';
import type { Db } from './pool';

export type RestoreOutcome = 'applied' | 'conflict';

export interface SavedWork {
  taskId: string;
  repositoryId: string;
  ref: string;
  commit: string;
  savedAt: string;
  /** The cleanup that saved it (null: saved before triggers were recorded). */
  trigger: string | null;
  /** Put back into a new worktree by a launch (null: not yet, or in conflict). */
  restoredAt: string | null;
  /** `abandoned`: its workspace was abandoned before a launch took it back (never applied by one). */
  restore: RestoreOutcome | 'abandoned' | null;
  /** Ignored paths the save left out, and why (`rebuildable`: dependencies, build output). */
  leftOut: { path: string; reason: string }[];
}

/** A retried save of the same task and repository moves the same ref: the row follows it. */
export async function recordSavedWork(
  db: Db,
  w: {
    repositoryId: string;
    ref: string;
    taskId: string;
    commit: string;
    trigger?: string | null;
    /** Ignored paths the save left out, and why (rebuilt: dependencies, build output). */
    leftOut?: { path: string; reason: string }[];
  },
): Promise<void> {
  await db.query(
    `INSERT INTO saved_work (repository_id, ref, task_id, commit, trigger, left_out) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (repository_id, ref) DO UPDATE SET commit = EXCLUDED.commit, saved_at = now(), trigger = EXCLUDED.trigger,
       left_out = EXCLUDED.left_out`,
    [w.repositoryId, w.ref, w.taskId, w.commit, w.trigger ?? null, JSON.stringify(w.leftOut ?? [])],
  );
}

/**
 * A task's saved work that a new worktree of these repositories takes back [R6.10]: saved by a
 * cleanup that kept the task (an idle release), not yet restored nor found in conflict; oldest
 * first, so several apply in the order they were saved.
 */
export async function workToRestore(
  db: Db,
  taskId: string,
  repositoryIds: string[],
): Promise<{ repositoryId: string; ref: string; commit: string }[]> {
  const res = await db.query<{ repository_id: string; ref: string; commit: string }>(
    `SELECT repository_id, ref, commit FROM saved_work
      WHERE task_id = $1 AND repository_id = ANY($2::uuid[]) AND restore IS NULL AND trigger = ANY($3::text[])
      ORDER BY saved_at, ref`,
    [taskId, repositoryIds, [...RESTORED_TRIGGERS]],
  );
  return res.rows.map((r) => ({ repositoryId: r.repository_id, ref: r.ref, commit: r.commit }));
}

/**
 * A launch whose new worktrees are discarded (it failed after the restore) gives its entries
 * back: the next launch restores them again.
 */
export async function forgetRestoresOf(db: Db, sessionId: string, repositoryIds: string[]): Promise<void> {
  await db.query(
    `UPDATE saved_work SET restore = NULL, restored_at = NULL, restored_by_session = NULL
      WHERE restored_by_session = $1 AND repository_id = ANY($2::uuid[])`,
    [sessionId, repositoryIds],
  );
}

/** What a launch's restore of one entry came to; the entry itself is kept (a deleted task's too). */
export async function recordRestore(
  db: Db,
  entry: { repositoryId: string; ref: string; outcome: RestoreOutcome; sessionId: string },
): Promise<void> {
  await db.query(
    `UPDATE saved_work SET restore = $3, restored_by_session = $4,
            restored_at = CASE WHEN $3 = 'applied' THEN now() ELSE NULL END
      WHERE repository_id = $1 AND ref = $2 AND restore IS NULL`,
    [entry.repositoryId, entry.ref, entry.outcome, entry.sessionId],
  );
}

export interface SessionRestore {
  restore: RestoreOutcome;
  /** The saved refs that did not apply, to apply by hand. */
  conflictRefs: string[];
}

/** What the restore of each session's launch came to: `conflict` when any entry did not apply; sessions that restored nothing are absent. */
export async function restoresOfSessions(db: Db, sessionIds: string[]): Promise<Map<string, SessionRestore>> {
  const out = new Map<string, SessionRestore>();
  if (sessionIds.length === 0) return out;
  const res = await db.query<{ session_id: string; ref: string; restore: RestoreOutcome }>(
    `SELECT restored_by_session AS session_id, ref, restore FROM saved_work
      WHERE restored_by_session = ANY($1::uuid[]) ORDER BY saved_at, ref`,
    [sessionIds],
  );
  for (const r of res.rows) {
    const entry = out.get(r.session_id) ?? { restore: 'applied', conflictRefs: [] };
    if (r.restore === 'conflict') entry.conflictRefs.push(r.ref);
    entry.restore = entry.conflictRefs.length > 0 ? 'conflict' : 'applied';
    out.set(r.session_id, entry);
  }
  return out;
}

/** Keyset page by (saved_at, ref): a repository's refs are unique. */
export async function listSavedWork(
  db: Db,
  repositoryId: string,
  page: PageOf,
): Promise<(SavedWork & { exact_at: string })[]> {
  const rows = await newestFirst<{
    task_id: string;
    repository_id: string;
    ref: string;
    commit: string;
    saved_at: Date;
    trigger: string | null;
    restored_at: Date | null;
    restore: RestoreOutcome | 'abandoned' | null;
    left_out: { path: string; reason: string }[];
  }>(
    db,
    {
      columns: 'task_id, repository_id, ref, commit, saved_at, trigger, restored_at, restore, left_out',
      table: 'saved_work',
      time: 'saved_at',
      key: 'ref',
      keyType: 'text',
      equal: { repository_id: repositoryId },
    },
    page,
  );
  return rows.map((r) => ({
    taskId: r.task_id,
    repositoryId: r.repository_id,
    ref: r.ref,
    commit: r.commit,
    savedAt: r.saved_at.toISOString(),
    trigger: r.trigger,
    restoredAt: r.restored_at ? r.restored_at.toISOString() : null,
    restore: r.restore,
    leftOut: r.left_out,
    exact_at: r.exact_at,
  }));
}

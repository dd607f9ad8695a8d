/**
 * Uncommitted work a removal saved on a hidden ref before it removed the worktree: recorded when
 * the ref is written, listed per repository, newest first.
 */
import type { Db } from './pool';

export interface SavedWork {
  taskId: string;
  repositoryId: string;
  ref: string;
  commit: string;
  savedAt: string;
}

/** A retried save of the same task and repository moves the same ref: the row follows it. */
export async function recordSavedWork(db: Db, w: { repositoryId: string; ref: string; taskId: string; commit: string }): Promise<void> {
  await db.query(
    `INSERT INTO saved_work (repository_id, ref, task_id, commit) VALUES ($1, $2, $3, $4)
     ON CONFLICT (repository_id, ref) DO UPDATE SET commit = EXCLUDED.commit, saved_at = now()`,
    [w.repositoryId, w.ref, w.taskId, w.commit],
  );
}

/** Keyset page: `after` is the last row of the previous page (its time and ref). */
export async function listSavedWork(db: Db, repositoryId: string, limit: number, after: { savedAt: string; ref: string } | null): Promise<(SavedWork & { exactAt: string })[]> {
  // `exactAt` keeps the microseconds a page boundary needs (a JavaScript date has milliseconds).
  const res = await db.query<{ task_id: string; repository_id: string; ref: string; commit: string; saved_at: Date; exact_at: string }>(
    `SELECT task_id, repository_id, ref, commit, saved_at, saved_at::text AS exact_at FROM saved_work
      WHERE repository_id = $1 AND ($2::timestamptz IS NULL OR (saved_at, ref) < ($2::timestamptz, $3::text))
      ORDER BY saved_at DESC, ref DESC LIMIT $4`,
    [repositoryId, after?.savedAt ?? null, after?.ref ?? null, limit],
  );
  return res.rows.map((r) => ({ taskId: r.task_id, repositoryId: r.repository_id, ref: r.ref, commit: r.commit, savedAt: r.saved_at.toISOString(), exactAt: r.exact_at }));
}

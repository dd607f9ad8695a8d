/**
 * Uncommitted work a removal saved on a hidden ref before it removed the worktree: recorded when
 * the ref is written, listed per repository, newest first.
 */
import { newestFirst, type PageOf } from './keyset';
import type { Db } from './pool';

export interface SavedWork {
  taskId: string;
  repositoryId: string;
  ref: string;
  commit: string;
  savedAt: string;
}

/** A retried save of the same task and repository moves the same ref: the row follows it. */
export async function recordSavedWork(
  db: Db,
  w: { repositoryId: string; ref: string; taskId: string; commit: string },
): Promise<void> {
  await db.query(
    `INSERT INTO saved_work (repository_id, ref, task_id, commit) VALUES ($1, $2, $3, $4)
     ON CONFLICT (repository_id, ref) DO UPDATE SET commit = EXCLUDED.commit, saved_at = now()`,
    [w.repositoryId, w.ref, w.taskId, w.commit],
  );
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
  }>(
    db,
    {
      columns: 'task_id, repository_id, ref, commit, saved_at',
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
    exact_at: r.exact_at,
  }));
}

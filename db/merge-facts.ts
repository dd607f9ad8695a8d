/** What a merge of a task asks the records before it moves anything [R8.3]. */
import { RESTORED_TRIGGERS } from '../domain/saved-work';
import type { Db } from './pool';

export interface TaskMergeFacts {
  title: string;
  archived: boolean;
  /** Sessions of the task's workspace whose agents are starting or running (the task's and any sharer's). */
  activeSessions: { sessionId: string; state: string }[];
  /** Repositories with saved uncommitted work not yet put back (a released task's): that counts as uncommitted. */
  savedWorkRepositories: string[];
}

export async function taskMergeFacts(db: Db, taskId: string): Promise<TaskMergeFacts | null> {
  const task = await db.query<{ title: string; archived: boolean }>(
    `SELECT title, archived_at IS NOT NULL AS archived FROM tasks WHERE id = $1`,
    [taskId],
  );
  if (!task.rows[0]) return null;
  const sessions = await db.query<{ id: string; state: string }>(
    `SELECT s.id, s.state FROM sessions s
      WHERE s.state IN ('starting', 'running')
        AND (s.task_id = $1 OR s.environment_id = (SELECT id FROM task_environments WHERE task_id = $1))
      ORDER BY s.id`,
    [taskId],
  );
  const saved = await db.query<{ repository_id: string }>(
    `SELECT DISTINCT repository_id FROM saved_work WHERE task_id = $1 AND restore IS NULL
        AND trigger = ANY($2::text[])`,
    [taskId, RESTORED_TRIGGERS],
  );
  return {
    ...task.rows[0],
    activeSessions: sessions.rows.map((r) => ({ sessionId: r.id, state: r.state })),
    savedWorkRepositories: saved.rows.map((r) => r.repository_id),
  };
}

/**
 * The rows a board delete reads and changes [R6]. Its members are the tasks whose board_id is
 * the board (children on other boards are not members: they stay, as roots of their own). A task
 * already under an active cleanup job is not a member: its own job goes on and it leaves the board.
 */
import type { Db } from './pool';

const ACTIVE_JOB = `EXISTS (SELECT 1 FROM cleanup_jobs j WHERE j.task_id = t.id AND j.state NOT IN ('succeeded', 'cancelled'))`;

/** The tasks a delete of the board would clean up, newest first (children before the parents they were made under); null when the board is gone. */
export async function boardMembers(db: Db, boardId: string): Promise<string[] | null> {
  if ((await db.query('SELECT 1 FROM boards WHERE id = $1', [boardId])).rowCount !== 1) return null;
  const res = await db.query<{ id: string }>(
    `SELECT t.id FROM tasks t WHERE t.board_id = $1 AND NOT ${ACTIVE_JOB} ORDER BY t.created_at DESC, t.id`,
    [boardId],
  );
  return res.rows.map((r) => r.id);
}

/**
 * Inside the preparation transaction: the board row and the rows of every task on it, locked
 * (a task cannot join the board, nor a job be reserved for one of its tasks, until the
 * transaction ends). Null when the board is gone; else the tasks on it, split by whether a
 * cleanup job of their own is active.
 */
export async function lockBoard(db: Db, boardId: string): Promise<{ free: string[]; busy: string[] } | null> {
  if ((await db.query('SELECT id FROM boards WHERE id = $1 FOR UPDATE', [boardId])).rowCount !== 1) return null;
  const onBoard = (
    await db.query<{ id: string }>('SELECT id FROM tasks WHERE board_id = $1 ORDER BY id FOR UPDATE', [boardId])
  ).rows.map((r) => r.id);
  // Read after the locks are held (a statement of its own sees what committed while it waited).
  const busy = (
    await db.query<{ id: string }>(`SELECT t.id FROM tasks t WHERE t.id = ANY($1::uuid[]) AND ${ACTIVE_JOB}`, [onBoard])
  ).rows.map((r) => r.id);
  return { free: onBoard.filter((id) => !busy.includes(id)), busy };
}

/** Tasks whose own cleanup goes on leave the board, which then goes. */
export async function deleteBoardDetaching(db: Db, boardId: string, busy: string[]): Promise<void> {
  await db.query('UPDATE tasks SET board_id = NULL WHERE id = ANY($1::uuid[]) AND board_id = $2', [busy, boardId]);
  const deleted = await db.query('DELETE FROM boards WHERE id = $1', [boardId]);
  if (deleted.rowCount !== 1) throw new Error('the board changed during its delete preparation');
}

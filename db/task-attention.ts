/**
 * What the board asks of a task beyond its own row, as columns of the same statement that reads
 * it (a list of 1,000 tasks is one query, each fact an index probe per row: migration 037):
 *
 * - `activity`: `working` while any session of the task is starting or running, else `idle`.
 * - `attention`: why a person must look, or null. The first that holds, in this order (what only an
 *   operator can settle first):
 *   1. `cleanup_needs_operator`: a cleanup job of the task waits for an operator.
 *   2. `merge_needs_operator` / 3. `merge_conflict`: the task's latest merge that ended
 *      `needs_operator`, or `refused` with `merge_conflict`, and no merge of the task made after it
 *      has merged (a merged one undone since counts: it did merge).
 *   4. `restore_conflict`: saved work of the task that a launch could not put back (`restore =
 *      'conflict'`: the ref is kept, to apply by hand), and no merge of the task made since that
 *      launch has merged.
 *   5. `launch_failed`: the task's newest session failed and none is starting or running.
 *
 * Only the reason and ids: never a path, a branch or an error's text.
 */

import type { AttentionReason } from '../domain/task-attention';

/** A merge of the task made after `since` that merged (undone later or not). */
const mergedSince = (since: string) =>
  `EXISTS (SELECT 1 FROM git_operations later WHERE later.task_id = tasks.id AND later.kind = 'merge'
      AND later.state IN ('merged', 'undone') AND later.created_at > ${since})`;

const attention = (reason: AttentionReason, operationId: string, sessionId: string) =>
  `json_build_object('reason', '${reason}', 'operationId', ${operationId}, 'sessionId', ${sessionId})`;

/** The columns `activity` and `attention` of a statement that reads `tasks` (correlated by `tasks.id`). */
export const TASK_ATTENTION_COLUMNS = `
  CASE WHEN EXISTS (SELECT 1 FROM sessions s WHERE s.task_id = tasks.id AND s.state IN ('starting', 'running'))
    THEN 'working' ELSE 'idle' END AS activity,
  COALESCE(
    (SELECT ${attention('cleanup_needs_operator', 'c.operation_id', 'NULL::uuid')} FROM cleanup_jobs c
      WHERE c.task_id = tasks.id AND c.state NOT IN ('succeeded', 'cancelled') AND c.state = 'needs_operator' LIMIT 1),
    (SELECT CASE WHEN m.state = 'needs_operator' THEN ${attention('merge_needs_operator', 'm.operation_id', 'NULL::uuid')}
                 ELSE ${attention('merge_conflict', 'm.operation_id', 'NULL::uuid')} END
       FROM git_operations m
      WHERE m.task_id = tasks.id AND m.kind = 'merge'
        AND (m.state = 'needs_operator' OR (m.state = 'refused' AND m.error->>'code' = 'merge_conflict'))
        AND NOT ${mergedSince('m.created_at')}
      ORDER BY m.created_at DESC, m.operation_id DESC LIMIT 1),
    (SELECT ${attention('restore_conflict', 'NULL::uuid', 'w.restored_by_session')}
       FROM saved_work w LEFT JOIN sessions rs ON rs.id = w.restored_by_session
      WHERE w.task_id = tasks.id AND w.restore = 'conflict'
        AND NOT ${mergedSince('COALESCE(rs.created_at, w.saved_at)')}
      ORDER BY w.saved_at DESC, w.ref DESC LIMIT 1),
    (SELECT ${attention('launch_failed', 'NULL::uuid', 'n.id')}
       FROM (SELECT s.id, s.state FROM sessions s WHERE s.task_id = tasks.id
              ORDER BY s.created_at DESC, s.id DESC LIMIT 1) n
      WHERE n.state = 'failed'
        AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.task_id = tasks.id AND s.state IN ('starting', 'running')))
  ) AS attention`;

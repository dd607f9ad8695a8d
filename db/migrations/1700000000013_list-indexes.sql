-- Up Migration
-- The lists read newest first by keyset: `(created_at, id) < (…)` ORDER BY
-- created_at DESC, id DESC, with at most one equality filter. Each list and filter gets an index
-- in that order, so a page reads its rows and stops, at any depth and any table size. An index
-- that led with the same column alone is replaced by its composite, which serves its lookups too.
CREATE INDEX tasks_list_idx ON tasks (created_at, id);
CREATE INDEX tasks_active_list_idx ON tasks (created_at, id) WHERE archived_at IS NULL;
CREATE INDEX tasks_archived_list_idx ON tasks (created_at, id) WHERE archived_at IS NOT NULL;
CREATE INDEX tasks_board_list_idx ON tasks (board_id, created_at, id) WHERE board_id IS NOT NULL;
DROP INDEX tasks_board_idx;
CREATE INDEX tasks_parent_list_idx ON tasks (parent_task_id, created_at, id) WHERE parent_task_id IS NOT NULL;
DROP INDEX tasks_parent_idx;

CREATE INDEX sessions_task_list_idx ON sessions (task_id, created_at, id);
CREATE INDEX repositories_list_idx ON repositories (created_at, id);
CREATE INDEX boards_list_idx ON boards (created_at, id);

CREATE INDEX cleanup_jobs_list_idx ON cleanup_jobs (created_at, operation_id);
CREATE INDEX cleanup_jobs_task_list_idx ON cleanup_jobs (task_id, created_at, operation_id);
CREATE INDEX cleanup_jobs_trigger_list_idx ON cleanup_jobs (trigger, created_at, operation_id);
CREATE INDEX cleanup_jobs_state_list_idx ON cleanup_jobs (state, created_at, operation_id);
DROP INDEX cleanup_jobs_state_idx;

-- Down Migration
CREATE INDEX cleanup_jobs_state_idx ON cleanup_jobs (state);
DROP INDEX cleanup_jobs_state_list_idx;
DROP INDEX cleanup_jobs_trigger_list_idx;
DROP INDEX cleanup_jobs_task_list_idx;
DROP INDEX cleanup_jobs_list_idx;
DROP INDEX boards_list_idx;
DROP INDEX repositories_list_idx;
DROP INDEX sessions_task_list_idx;
CREATE INDEX tasks_parent_idx ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;
DROP INDEX tasks_parent_list_idx;
CREATE INDEX tasks_board_idx ON tasks (board_id) WHERE board_id IS NOT NULL;
DROP INDEX tasks_board_list_idx;
DROP INDEX tasks_archived_list_idx;
DROP INDEX tasks_active_list_idx;
DROP INDEX tasks_list_idx;

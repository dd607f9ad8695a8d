-- Up Migration
-- Idle release and restore (R6.9-R6.10).
ALTER TABLE cleanup_jobs DROP CONSTRAINT cleanup_jobs_trigger_check;
ALTER TABLE cleanup_jobs ADD CONSTRAINT cleanup_jobs_trigger_check
  CHECK (trigger IN ('archive', 'delete', 'board_delete', 'quick_chat_expiry', 'environment_reset', 'environment_abandon', 'borrow_ended', 'idle_release'));
-- A pinned task is never released for idleness.
ALTER TABLE tasks ADD COLUMN pinned_at timestamptz;
-- Each saved entry says which cleanup saved it, and whether a launch put it back: `applied`
-- (restoredAt set) or `conflict` (it did not apply to the branch as it is now: the ref is
-- there to apply by hand). Entries are kept until the task is deleted: nothing is ever lost.
ALTER TABLE saved_work ADD COLUMN trigger text;
ALTER TABLE saved_work ADD COLUMN restored_at timestamptz;
ALTER TABLE saved_work ADD COLUMN restore text CHECK (restore IN ('applied', 'conflict'));
-- The session whose launch restored it (or found it in conflict): its view says so.
ALTER TABLE saved_work ADD COLUMN restored_by_session uuid;
CREATE INDEX saved_work_restored_by_session ON saved_work (restored_by_session) WHERE restored_by_session IS NOT NULL;
CREATE INDEX saved_work_to_restore ON saved_work (task_id, repository_id, saved_at) WHERE restore IS NULL;
-- When a workspace last changed as git status saw it (an observation with another payload):
-- a workspace an agent or a person still changes is not idle.
ALTER TABLE git_status_observations ADD COLUMN changed_at timestamptz;
UPDATE git_status_observations SET changed_at = observed_at;

-- Down Migration
ALTER TABLE git_status_observations DROP COLUMN changed_at;
DROP INDEX saved_work_to_restore;
DROP INDEX saved_work_restored_by_session;
ALTER TABLE saved_work DROP COLUMN restored_by_session;
ALTER TABLE saved_work DROP COLUMN restore;
ALTER TABLE saved_work DROP COLUMN restored_at;
ALTER TABLE saved_work DROP COLUMN trigger;
ALTER TABLE tasks DROP COLUMN pinned_at;
ALTER TABLE cleanup_jobs DROP CONSTRAINT cleanup_jobs_trigger_check;
ALTER TABLE cleanup_jobs ADD CONSTRAINT cleanup_jobs_trigger_check
  CHECK (trigger IN ('archive', 'delete', 'board_delete', 'quick_chat_expiry', 'environment_reset', 'environment_abandon', 'borrow_ended'));

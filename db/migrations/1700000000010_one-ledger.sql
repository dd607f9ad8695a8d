-- Up Migration
-- One ledger. The inventory rows of a task that is removed (delete, board
-- delete, quick-chat expiry) outlive it: the removal's job takes them over in the same
-- transaction that deletes the task, instead of the rows going with the environment and the
-- job's report becoming the only record. A worktree kept because it was dirty stays a row in
-- state `kept`; one a cancelled removal left behind stays `abandoned`; removed ones `deleted`.
ALTER TABLE environment_repos ALTER COLUMN environment_id DROP NOT NULL;
ALTER TABLE environment_repos ADD COLUMN cleanup_operation_id uuid REFERENCES cleanup_jobs(operation_id);
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_owned
  CHECK (environment_id IS NOT NULL OR cleanup_operation_id IS NOT NULL);
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_status_check;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_status_check
  CHECK (status IN ('active', 'retained', 'deleted', 'abandoned', 'kept'));
CREATE INDEX environment_repos_cleanup_operation_idx ON environment_repos (cleanup_operation_id) WHERE cleanup_operation_id IS NOT NULL;

-- Uncommitted work a delete saved on a hidden ref before removing its worktree (with consent,
-- or always for quick-chat expiry): what `GET /v1/repositories/:id/saved-work` lists. Recorded
-- the moment the ref is written, so a removal that fails afterwards still leaves it listed.
CREATE TABLE saved_work (
  repository_id uuid NOT NULL REFERENCES repositories(id),
  ref text NOT NULL,
  task_id uuid NOT NULL,
  commit text NOT NULL,
  saved_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repository_id, ref)
);
CREATE INDEX saved_work_by_time ON saved_work (repository_id, saved_at DESC, ref);

-- Down Migration
DROP TABLE saved_work;
DROP INDEX environment_repos_cleanup_operation_idx;
DELETE FROM environment_repos WHERE environment_id IS NULL;
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_status_check;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_status_check
  CHECK (status IN ('active', 'retained', 'deleted', 'abandoned'));
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_owned;
ALTER TABLE environment_repos DROP COLUMN cleanup_operation_id;
ALTER TABLE environment_repos ALTER COLUMN environment_id SET NOT NULL;

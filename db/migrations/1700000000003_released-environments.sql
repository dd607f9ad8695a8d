-- Up Migration
-- `released`: cleanup (archive, environment reset) removed the workspace's worktrees but kept
-- the environment's identity and any worktree it had to keep (dirty work is never deleted).
-- The next launch materializes it again, adopting what is still registered at its paths.
ALTER TABLE task_environments DROP CONSTRAINT task_environments_status_check;
ALTER TABLE task_environments ADD CONSTRAINT task_environments_status_check
  CHECK (status IN ('creating', 'ready', 'stopped', 'failed', 'released'));

-- The folder that holds the environment's worktrees and its ownership marker. It is recorded
-- because ownership can move (a deleted task hands its environment to a borrowing task) while
-- the files stay where they are.
ALTER TABLE task_environments ADD COLUMN task_folder text;

-- Launches touch the task's activity time (quick-chat expiry reads it).
CREATE INDEX sessions_running_env_idx ON sessions (environment_id, task_id) WHERE state IN ('starting', 'running');

-- Down Migration

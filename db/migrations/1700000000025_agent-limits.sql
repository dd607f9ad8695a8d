-- Up Migration
-- What a session's agents may use: the limits its launch resolved (defaults, its
-- profile's, its own), kept for its resumes; null for sessions from before limits (the defaults).
ALTER TABLE sessions ADD COLUMN agent_limits jsonb;
-- How an execution ended when a limit ended it: `oom_killed` (its memory limit). Null otherwise.
ALTER TABLE executions ADD COLUMN outcome text CHECK (outcome IN ('oom_killed', 'disk_quota'));

-- A task's own disk quota (TWS_TASK_DISK_QUOTA when null): its workspace, measured, at most this.
ALTER TABLE tasks ADD COLUMN disk_quota_bytes bigint CHECK (disk_quota_bytes > 0);

-- What a task's agents use together, as its host's worker last read its control group:
-- one row per task whose agents run, gone when none runs.
CREATE TABLE task_usage (
  task_id uuid PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
  host_id text NOT NULL,
  memory_bytes bigint NOT NULL,
  pids integer NOT NULL,
  measured_at timestamptz NOT NULL
);

-- Down Migration
DROP TABLE task_usage;
ALTER TABLE tasks DROP COLUMN disk_quota_bytes;
ALTER TABLE executions DROP COLUMN outcome;
ALTER TABLE sessions DROP COLUMN agent_limits;

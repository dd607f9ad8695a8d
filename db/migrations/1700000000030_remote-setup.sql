-- Up Migration
-- A setup run on an SSH target keeps its log there: its record names the target, so the log is
-- read over SSH by the host that talks to it (as an agent's is).
ALTER TABLE workspace_preparations ADD COLUMN ssh_target_id uuid;
-- A task's view shows how its workspace was last made ready: the newest of its environment's.
CREATE INDEX workspace_preparations_environment ON workspace_preparations (environment_id, created_at DESC);

-- Down Migration
DROP INDEX workspace_preparations_environment;
ALTER TABLE workspace_preparations DROP COLUMN ssh_target_id;

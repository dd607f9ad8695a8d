-- Up Migration
-- A setup run on an SSH target keeps its log there: its record names the target, so the log is
-- read over SSH by the host that talks to it (as an agent's is).
ALTER TABLE workspace_preparations ADD COLUMN ssh_target_id uuid;

-- Down Migration
ALTER TABLE workspace_preparations DROP COLUMN ssh_target_id;

-- Up Migration
-- Disk in sight (R6.11): each host measures its workspaces and its workspace root's
-- filesystem in the background. Apart from task_environments so a measurement never waits for,
-- or holds, the row lock a launch or a cleanup takes.
CREATE TABLE environment_disk (
  environment_id uuid PRIMARY KEY REFERENCES task_environments(id) ON DELETE CASCADE,
  host_id text NOT NULL,
  bytes bigint NOT NULL CHECK (bytes >= 0),
  measured_at timestamptz NOT NULL
);
CREATE INDEX environment_disk_largest ON environment_disk (host_id, bytes DESC);
-- The host's filesystem as its worker last measured it, and the minimum free space its own
-- TWS_MIN_FREE_DISK asks for (so every reader judges `lowDisk` by the host's setting).
ALTER TABLE hosts ADD COLUMN disk_free_bytes bigint;
ALTER TABLE hosts ADD COLUMN disk_total_bytes bigint;
ALTER TABLE hosts ADD COLUMN disk_workspace_bytes bigint;
ALTER TABLE hosts ADD COLUMN disk_min_free_bytes bigint;
ALTER TABLE hosts ADD COLUMN disk_measured_at timestamptz;

-- Down Migration
ALTER TABLE hosts DROP COLUMN disk_measured_at;
ALTER TABLE hosts DROP COLUMN disk_min_free_bytes;
ALTER TABLE hosts DROP COLUMN disk_workspace_bytes;
ALTER TABLE hosts DROP COLUMN disk_total_bytes;
ALTER TABLE hosts DROP COLUMN disk_free_bytes;
DROP TABLE environment_disk;

-- Executor hosts as records: each worker says it is alive (last_seen_at) every heartbeat_every_ms,
-- with its workspace root, version and executors. A host is live while its last heartbeat is
-- younger than three of its own intervals (db/hosts.ts), so hosts with other settings compare fairly.
CREATE TABLE hosts (
  host_id text PRIMARY KEY,
  workspace_root text NOT NULL,
  version text NOT NULL,
  executors text[] NOT NULL,
  heartbeat_every_ms integer NOT NULL CHECK (heartbeat_every_ms > 0),
  registered_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now()
);

-- A repository lives on one host: its path means something only there. Repositories registered
-- before hosts get the host their environments were made on when there was exactly one; the rest
-- (no environment yet) are adopted by the first host that registers while it is the only one.
ALTER TABLE repositories ADD COLUMN host_id text;
UPDATE repositories SET host_id = (SELECT min(host_id) FROM task_environments)
 WHERE (SELECT count(DISTINCT host_id) FROM task_environments) = 1;

-- The same path on two hosts is two repositories.
ALTER TABLE repositories DROP CONSTRAINT repositories_path_key;
CREATE UNIQUE INDEX repositories_host_path ON repositories (COALESCE(host_id, ''), path);

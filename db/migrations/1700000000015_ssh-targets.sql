-- SSH executor targets: a machine reached over SSH, where an SSH session's workspace lives under
-- workspace_root. The private key stays a path on the host whose worker talks to the target
-- (host_id): the key itself is never stored here, and no answer of the API shows the path.
-- known_hosts pins the target's host key(s); nothing is trusted on first use.
CREATE TABLE ssh_targets (
  id uuid PRIMARY KEY,
  name text NOT NULL UNIQUE,
  host text NOT NULL,
  port integer NOT NULL DEFAULT 22 CHECK (port BETWEEN 1 AND 65535),
  username text NOT NULL,
  private_key_path text NOT NULL CHECK (private_key_path LIKE '/%'),
  known_hosts text NOT NULL,
  workspace_root text NOT NULL CHECK (workspace_root LIKE '/%'),
  host_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- GET /v1/ssh-targets reads newest first by keyset, as the other lists (migration 013).
CREATE INDEX ssh_targets_list_idx ON ssh_targets (created_at, id);

-- The SSH executor's environments and executions say which target they are on.
ALTER TABLE task_environments ADD COLUMN ssh_target_id uuid REFERENCES ssh_targets(id);
ALTER TABLE executions ADD COLUMN ssh_target_id uuid;

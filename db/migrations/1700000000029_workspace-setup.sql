-- Up Migration
-- A new workspace made ready to work in, per repository: files copied from the source checkout
-- (copy_files: patterns from its top), a command run once before the first agent (setup: argv),
-- and what a failing setup does (setup_failure: warn, the launch goes on; refuse, it is undone).
ALTER TABLE repositories ADD COLUMN copy_files jsonb;
ALTER TABLE repositories ADD COLUMN setup jsonb;
ALTER TABLE repositories ADD COLUMN setup_failure text NOT NULL DEFAULT 'warn' CHECK (setup_failure IN ('warn', 'refuse'));
-- What a launch that made a workspace did to make it ready, per repository: what it copied and
-- skipped, and its setup's outcome and log. Kept with the session (its views read it).
CREATE TABLE workspace_preparations (
  session_id uuid NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  repository_id uuid NOT NULL,
  environment_id uuid NOT NULL,
  host_id text NOT NULL,
  position int NOT NULL,
  copied jsonb NOT NULL DEFAULT '[]',
  skipped jsonb NOT NULL DEFAULT '[]',
  setup_status text,
  exit_code int,
  signal text,
  log_path text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, repository_id)
);

-- Down Migration
DROP TABLE workspace_preparations;
ALTER TABLE repositories DROP COLUMN setup_failure;
ALTER TABLE repositories DROP COLUMN setup;
ALTER TABLE repositories DROP COLUMN copy_files;

-- Up Migration
-- The schema is the source of truth for ownership. Invariants are constraints:
--   one environment per task (task_environments.task_id UNIQUE),
--   one active inventory row per (environment, repository, branch slot) (partial unique index),
--   at most one active cleanup job per task (partial unique index): the cleanup barrier.

CREATE TABLE repositories (
  id uuid PRIMARY KEY,
  name text NOT NULL UNIQUE,
  path text NOT NULL UNIQUE,
  default_branch text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE boards (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workspace_groups (
  id uuid PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tasks (
  id uuid PRIMARY KEY,
  title text NOT NULL,
  board_id uuid REFERENCES boards(id) ON DELETE SET NULL,
  parent_task_id uuid REFERENCES tasks(id) ON DELETE SET NULL,
  workspace_mode text NOT NULL DEFAULT 'new_workspace'
    CHECK (workspace_mode IN ('new_workspace', 'inherit_parent', 'shared_group')),
  group_id uuid REFERENCES workspace_groups(id),
  quick_chat boolean NOT NULL DEFAULT false,
  archived_at timestamptz,
  last_activity_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((workspace_mode = 'shared_group') = (group_id IS NOT NULL)),
  CHECK (workspace_mode <> 'inherit_parent' OR parent_task_id IS NOT NULL)
);
CREATE INDEX tasks_board_idx ON tasks (board_id) WHERE board_id IS NOT NULL;
CREATE INDEX tasks_parent_idx ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;
CREATE INDEX tasks_group_idx ON tasks (group_id) WHERE group_id IS NOT NULL;
CREATE INDEX tasks_quick_chat_idle_idx ON tasks (last_activity_at) WHERE quick_chat AND archived_at IS NULL;

-- The repositories a task works on and the branch slot each one occupies.
CREATE TABLE task_repositories (
  task_id uuid NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  repository_id uuid NOT NULL REFERENCES repositories(id),
  position integer NOT NULL,
  base_branch text NOT NULL,
  checkout_branch text,
  branch_slug text NOT NULL,
  PRIMARY KEY (task_id, repository_id),
  UNIQUE (task_id, position)
);

CREATE TABLE task_environments (
  id uuid PRIMARY KEY,
  task_id uuid NOT NULL UNIQUE REFERENCES tasks(id) ON DELETE CASCADE,
  executor_type text NOT NULL,
  host_id text NOT NULL,
  status text NOT NULL CHECK (status IN ('creating', 'ready', 'stopped', 'failed')),
  workspace_path text,
  materializer_session_id uuid,
  materialized boolean NOT NULL DEFAULT false,
  ownership_generation integer NOT NULL DEFAULT 1,
  failure_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (status <> 'ready' OR workspace_path IS NOT NULL)
);

-- Groups share the environment of the member that materialized it.
ALTER TABLE workspace_groups ADD COLUMN environment_id uuid REFERENCES task_environments(id) ON DELETE SET NULL;

-- The inventory: the ONLY record of which worktrees exist.
CREATE TABLE environment_repos (
  id uuid PRIMARY KEY,
  environment_id uuid NOT NULL REFERENCES task_environments(id) ON DELETE CASCADE,
  repository_id uuid NOT NULL REFERENCES repositories(id),
  branch_slug text NOT NULL,
  executor_type text NOT NULL,
  worktree_id text,
  worktree_path text,
  worktree_branch text,
  head_commit text,
  position integer NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'retained', 'deleted')),
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- A physical worktree identity is id, path and branch together [R4.2].
  CHECK ((worktree_id IS NULL) = (worktree_path IS NULL) AND (worktree_id IS NULL) = (worktree_branch IS NULL))
);
CREATE UNIQUE INDEX environment_repos_one_active_slot
  ON environment_repos (environment_id, repository_id, branch_slug) WHERE status = 'active';
CREATE INDEX environment_repos_path_idx ON environment_repos (worktree_path) WHERE worktree_path IS NOT NULL;

CREATE TABLE sessions (
  id uuid PRIMARY KEY,
  task_id uuid NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  environment_id uuid REFERENCES task_environments(id) ON DELETE SET NULL,
  state text NOT NULL CHECK (state IN ('starting', 'running', 'stopped', 'exited', 'failed')),
  executor_type text NOT NULL,
  agent_profile text NOT NULL,
  command jsonb,
  name text,
  role text CHECK (role IN ('materialized', 'attached', 'transitioned')),
  resume_count integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_task_state_idx ON sessions (task_id, state);
CREATE INDEX sessions_environment_idx ON sessions (environment_id) WHERE environment_id IS NOT NULL;

-- One agent process. Identity is host + pid + process start time, never pid alone.
CREATE TABLE executions (
  id uuid PRIMARY KEY,
  session_id uuid NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  host_id text NOT NULL,
  pid integer NOT NULL,
  process_start_time text NOT NULL,
  cwd text NOT NULL,
  log_path text NOT NULL,
  status text NOT NULL CHECK (status IN ('running', 'exited', 'stopped', 'vanished')),
  started_at timestamptz NOT NULL DEFAULT now(),
  ended_at timestamptz
);
CREATE INDEX executions_session_idx ON executions (session_id, started_at DESC);
CREATE INDEX executions_running_idx ON executions (host_id) WHERE status = 'running';

-- No foreign key to tasks: a job outlives the task and holds the inventory snapshot.
CREATE TABLE cleanup_jobs (
  operation_id uuid PRIMARY KEY,
  task_id uuid NOT NULL,
  trigger text NOT NULL CHECK (trigger IN ('archive', 'delete', 'board_delete', 'quick_chat_expiry', 'environment_reset')),
  state text NOT NULL CHECK (state IN ('prepared', 'pending', 'running', 'retry_wait', 'needs_operator', 'succeeded', 'cancelled')),
  snapshot jsonb NOT NULL DEFAULT '[]'::jsonb,
  report jsonb NOT NULL DEFAULT '{}'::jsonb,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  last_error text,
  workflow_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE UNIQUE INDEX cleanup_jobs_one_active_per_task
  ON cleanup_jobs (task_id) WHERE state NOT IN ('succeeded', 'cancelled');
CREATE INDEX cleanup_jobs_state_idx ON cleanup_jobs (state);

CREATE TABLE git_status_observations (
  environment_id uuid NOT NULL REFERENCES task_environments(id) ON DELETE CASCADE,
  repository_id uuid NOT NULL REFERENCES repositories(id),
  workspace_path text NOT NULL,
  observed_at timestamptz NOT NULL,
  payload jsonb NOT NULL,
  PRIMARY KEY (environment_id, repository_id)
);

-- Down Migration
-- Forward-only: this project never runs down migrations.

-- Up Migration
-- Finishing a task [R8]. A repository may name the remote its task branches (or its base after a
-- merge) are pushed to, and the merge strategies it allows (NULL: all of them).
ALTER TABLE repositories ADD COLUMN remote text,
  ADD COLUMN merge_strategies text[] CHECK (merge_strategies <@ ARRAY['squash', 'merge', 'fast_forward', 'rebase']);

-- One row per merge, rebase or undo of a task. A merge's plan (per repository: the base before, the
-- task head, the base after) is written before any ref moves, so a replay after any crash decides
-- from the base's current value: merged once or not at all.
CREATE TABLE git_operations (
  operation_id uuid PRIMARY KEY,
  task_id uuid NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('merge', 'rebase', 'undo')),
  -- The merge an undo undoes.
  undoes uuid REFERENCES git_operations(operation_id) ON DELETE CASCADE,
  idempotency_key text,
  strategy text CHECK (strategy IN ('squash', 'merge', 'fast_forward', 'rebase')),
  request jsonb NOT NULL DEFAULT '{}',
  state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'merged', 'refused', 'undone', 'needs_operator', 'done')),
  plan jsonb,
  repositories jsonb NOT NULL DEFAULT '[]',
  error jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  undone_at timestamptz,
  UNIQUE (task_id, idempotency_key)
);
-- One merge, rebase or undo of a task at a time (merge_in_progress); different tasks never wait on it.
CREATE UNIQUE INDEX git_operations_one_running ON git_operations (task_id) WHERE state = 'running';
CREATE INDEX git_operations_task ON git_operations (task_id, created_at DESC, operation_id DESC);

-- Down Migration
DROP TABLE git_operations;
ALTER TABLE repositories DROP COLUMN remote, DROP COLUMN merge_strategies;

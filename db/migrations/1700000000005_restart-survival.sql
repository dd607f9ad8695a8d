-- Up Migration
-- Every step idempotent by its own id, whichever process dies in the middle of it.

-- A cascade's preparation names its members: a re-run of the cascade's first workflow task
-- (after the engine or the worker died once the preparation had committed) finds them here
-- instead of reading a task tree that the preparation itself archived or deleted.
ALTER TABLE cleanup_jobs ADD COLUMN cascade_operation_id uuid;
ALTER TABLE cleanup_jobs ADD COLUMN cascade_position integer;
CREATE INDEX cleanup_jobs_cascade_idx ON cleanup_jobs (cascade_operation_id, cascade_position) WHERE cascade_operation_id IS NOT NULL;

-- The intent to start an agent, committed BEFORE the spawn. The spawn and its execution row are
-- one transaction; a process that dies between the two leaves a running agent and no row. The
-- intent (and the execution id in the agent's environment) lets the re-run adopt that agent
-- instead of starting a second one, and lets cleanup and the reconcile find it. No foreign key:
-- an intent outlives a deleted session, so its agent is never lost track of.
CREATE TABLE spawn_intents (
  execution_id uuid PRIMARY KEY,
  session_id uuid NOT NULL,
  task_id uuid NOT NULL,
  host_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX spawn_intents_task_idx ON spawn_intents (task_id);
CREATE INDEX spawn_intents_host_idx ON spawn_intents (host_id, created_at);

-- Idempotency-Key of launch and resume: the same key (in the same scope) returns the same
-- session, never a second one. The request's fingerprint refuses a key reused for another request.
CREATE TABLE idempotency_keys (
  scope text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  session_id uuid NOT NULL,
  run_number integer,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, key)
);

-- Down Migration
DROP TABLE idempotency_keys;
DROP TABLE spawn_intents;
DROP INDEX cleanup_jobs_cascade_idx;
ALTER TABLE cleanup_jobs DROP COLUMN cascade_position;
ALTER TABLE cleanup_jobs DROP COLUMN cascade_operation_id;

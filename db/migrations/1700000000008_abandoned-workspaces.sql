-- Up Migration
-- Recovery from a workspace the audited removal refuses. An operator may
-- abandon an environment's workspace instead of removing it: the inventory rows become
-- `abandoned` (their paths stay known, so nothing removes them, the orphan sweep included) and
-- the environment `released`, with its next layout generation, so that the next launch
-- materializes afresh at a new folder on a new task branch (domain/task-layout.ts).
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_status_check;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_status_check
  CHECK (status IN ('active', 'retained', 'deleted', 'abandoned'));

-- The abandonment of an environment with no active job is a job of its own: durable, listed
-- with the others, its report naming the abandoned paths.
ALTER TABLE cleanup_jobs DROP CONSTRAINT cleanup_jobs_trigger_check;
ALTER TABLE cleanup_jobs ADD CONSTRAINT cleanup_jobs_trigger_check
  CHECK (trigger IN ('archive', 'delete', 'board_delete', 'quick_chat_expiry', 'environment_reset', 'environment_abandon'));

-- 0: the task's first folder and branch; each abandonment moves the next materialization on.
ALTER TABLE task_environments ADD COLUMN layout_generation integer NOT NULL DEFAULT 0 CHECK (layout_generation >= 0);

-- Down Migration
ALTER TABLE task_environments DROP COLUMN layout_generation;
ALTER TABLE cleanup_jobs DROP CONSTRAINT cleanup_jobs_trigger_check;
ALTER TABLE cleanup_jobs ADD CONSTRAINT cleanup_jobs_trigger_check
  CHECK (trigger IN ('archive', 'delete', 'board_delete', 'quick_chat_expiry', 'environment_reset'));
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_status_check;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_status_check
  CHECK (status IN ('active', 'retained', 'deleted'));

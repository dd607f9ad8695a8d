-- A bulk cleanup (a board delete) removes many tasks' worktrees in one host step per batch of
-- tasks, per repository in shared turns of its lock. Each task keeps its job row;
-- the row names the batch's workflow while that workflow carries the job out, so a run of the
-- job's own (the consistency check's, an operator's cancel) leaves the job to it meanwhile, and
-- an operator finds the run that did the work.
ALTER TABLE cleanup_jobs ADD COLUMN batch_workflow_id text;

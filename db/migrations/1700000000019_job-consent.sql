-- Up Migration
-- A delete's consent to discard uncommitted work (discardChanges=true), kept on its job:
-- a new run of the job (its run was lost, an operator retries or cancels) continues with the
-- consent its request gave, not without it. Jobs reserved before read false (nothing is lost:
-- a dirty worktree is then kept, as before).
ALTER TABLE cleanup_jobs ADD COLUMN discard_changes boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE cleanup_jobs DROP COLUMN discard_changes;

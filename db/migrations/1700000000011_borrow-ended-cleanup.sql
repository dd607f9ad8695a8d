-- Up Migration
-- The follow-up of an archive that kept its environment for another task's sessions: once the
-- last borrower is archived, deleted or has no session left in it, a job of the archived owner
-- with trigger `borrow_ended` cleans the environment as the archive would have.
ALTER TABLE cleanup_jobs DROP CONSTRAINT cleanup_jobs_trigger_check;
ALTER TABLE cleanup_jobs ADD CONSTRAINT cleanup_jobs_trigger_check
  CHECK (trigger IN ('archive', 'delete', 'board_delete', 'quick_chat_expiry', 'environment_reset', 'environment_abandon', 'borrow_ended'));

-- Down Migration
ALTER TABLE cleanup_jobs DROP CONSTRAINT cleanup_jobs_trigger_check;
ALTER TABLE cleanup_jobs ADD CONSTRAINT cleanup_jobs_trigger_check
  CHECK (trigger IN ('archive', 'delete', 'board_delete', 'quick_chat_expiry', 'environment_reset', 'environment_abandon'));

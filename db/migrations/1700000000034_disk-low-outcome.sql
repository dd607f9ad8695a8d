-- Up Migration
-- `disk_low`: an execution the host's free-space guard stopped, its workspace root's filesystem
-- about to fall under TWS_MIN_FREE_DISK (worker/disk-guard.ts).
ALTER TABLE executions DROP CONSTRAINT executions_outcome_check;
ALTER TABLE executions ADD CONSTRAINT executions_outcome_check
  CHECK (outcome IN ('oom_killed', 'disk_quota', 'disk_low'));

-- Down Migration
UPDATE executions SET outcome = NULL WHERE outcome = 'disk_low';
ALTER TABLE executions DROP CONSTRAINT executions_outcome_check;
ALTER TABLE executions ADD CONSTRAINT executions_outcome_check CHECK (outcome IN ('oom_killed', 'disk_quota'));

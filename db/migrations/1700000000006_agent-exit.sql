-- Up Migration
-- How an agent ended, as its supervising parent saw it: the exit code, or the signal that ended it.
ALTER TABLE executions ADD COLUMN exit_code integer;
ALTER TABLE executions ADD COLUMN signal text;

-- Down Migration
ALTER TABLE executions DROP COLUMN signal;
ALTER TABLE executions DROP COLUMN exit_code;

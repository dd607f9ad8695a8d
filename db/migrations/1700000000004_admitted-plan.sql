-- Up Migration
-- The plan a launch was admitted with, written in the admission transaction. A launch's steps
-- run as local activities in one workflow task; a worker that dies before that task completes
-- leaves no record of the admission in the workflow's history, and the next worker runs the
-- admission again: it must get the same plan back, not a refusal of its own election.
ALTER TABLE sessions ADD COLUMN admitted_plan jsonb;

-- Down Migration
ALTER TABLE sessions DROP COLUMN admitted_plan;

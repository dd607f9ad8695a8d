-- Up Migration
-- A resume is admitted like a launch. The run it admitted (the last segment of its workflow id,
-- resume/<sessionId>/<run>) is kept beside the plan, so a re-run of that admission after a worker
-- died answers the same plan, and the consistency check finds the run a `starting` session
-- belongs to. The run counter counts a resume once its agent started (`counted_run`: the run
-- last counted, so a re-run never counts twice); a refused resume changes nothing.
ALTER TABLE sessions ADD COLUMN admitted_run text, ADD COLUMN counted_run text;

-- Down Migration
ALTER TABLE sessions DROP COLUMN admitted_run, DROP COLUMN counted_run;

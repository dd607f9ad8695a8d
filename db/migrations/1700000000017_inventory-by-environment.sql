-- The inventory is read by environment in every state (a cleanup's snapshot reads active and
-- retained rows; deleting an environment's rows goes through them too), but its only index on
-- environment_id was the partial one of active slots: at 100,000 environments each such read
-- scanned the table (the benchmark's 200-task board delete prepared for 32 s).
CREATE INDEX environment_repos_environment_idx ON environment_repos (environment_id);

-- Up Migration
-- The variables a session's agent was launched with (the profile's and the request's): a resume
-- starts it again with the same ones.
ALTER TABLE sessions ADD COLUMN agent_env jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Down Migration
ALTER TABLE sessions DROP COLUMN agent_env;

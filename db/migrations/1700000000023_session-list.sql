-- Up Migration
-- The instance-wide list of sessions (GET /v1/sessions, `tws stop --all`, the launcher's count of
-- the agents that outlive a Ctrl-C): newest first by keyset, optionally by state, like the lists
-- of migration 013.
CREATE INDEX sessions_list_idx ON sessions (created_at, id);
CREATE INDEX sessions_state_list_idx ON sessions (state, created_at, id);

-- Down Migration
DROP INDEX sessions_state_list_idx;
DROP INDEX sessions_list_idx;

-- Up Migration
-- The host uid each workspace's agents run as: one per owner (a task's environment, or
-- a source checkout for `local` agents), never two owners on one uid, kept while the owner exists
-- so that the files its agents wrote stay theirs alone.
CREATE TABLE agent_uids (
  owner text PRIMARY KEY,
  uid bigint NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE agent_uids;

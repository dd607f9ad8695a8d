-- Up Migration
-- Each co-residency observation [R5], for operators: which sessions a starting session saw.
-- Kept apart from the sessions so it survives them; no foreign keys.
CREATE TABLE coresidency_observations (
  id bigserial PRIMARY KEY,
  session_id uuid NOT NULL,
  site text NOT NULL CHECK (site IN ('launch', 'resume')),
  outcome text NOT NULL CHECK (outcome IN ('coresident', 'skipped')),
  sibling_session_ids uuid[] NOT NULL DEFAULT '{}',
  reason text,
  observed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX coresidency_observations_session_idx ON coresidency_observations (session_id);

-- Down Migration

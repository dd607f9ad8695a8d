-- Up Migration
-- Counters that workers record and every gateway's /metrics reports: cluster-wide and durable,
-- so an observation made on one worker is visible whichever gateway is scraped.
-- Labels are a closed set written by the code (site, reason), never identifiers.
CREATE TABLE metric_counters (
  name text NOT NULL,
  labels text NOT NULL,
  value bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (name, labels)
);

-- Down Migration

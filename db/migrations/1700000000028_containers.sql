-- Up Migration
-- The container executor: the container each task environment's `container` agents run in, made
-- on its host by the first agent start that needs it and removed by the task's cleanup. The row
-- names the container by its engine id, with the image and the bind layout it was made with; a
-- container whose row is gone (or that names no row) is an orphan the sweep removes.
CREATE TABLE environment_containers (
  environment_id uuid PRIMARY KEY,
  host_id text NOT NULL,
  container_id text NOT NULL UNIQUE,
  image text NOT NULL,
  layout text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX environment_containers_host ON environment_containers (host_id);
-- The image a `container` session's agents run in (resolved by the gateway), for its resumes.
ALTER TABLE sessions ADD COLUMN container_image text;
-- Whether a host can run containers, as its worker last found it: {available, engine, reason?}.
ALTER TABLE hosts ADD COLUMN containers jsonb;

-- Down Migration
ALTER TABLE hosts DROP COLUMN containers;
ALTER TABLE sessions DROP COLUMN container_image;
DROP TABLE environment_containers;

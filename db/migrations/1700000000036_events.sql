-- Up Migration
-- What changed, for GET /v1/events (the console and `tws` follow it): one row per change a reader
-- would see of a task, session, execution, merge or cleanup job. Only ids, kinds and states: never a
-- path, branch, title or log text. The gateway reads new rows in id order after a NOTIFY, and
-- prunes the table (last 24 h, at most 100,000 rows): client/gateway/event-hub.ts.
CREATE TABLE events (
  id bigserial PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('task', 'session', 'execution', 'merge', 'cleanup_job')),
  entity_id uuid NOT NULL,
  task_id uuid,
  change text NOT NULL CHECK (change IN ('created', 'updated', 'deleted')),
  state text,
  at timestamptz NOT NULL DEFAULT now()
);

-- One function for every table below: a few plain statements on the writer's own transaction.
-- The payload is constant, so PostgreSQL sends one notification per transaction however many rows
-- it changed; the reader takes every row after the last it read.
CREATE FUNCTION record_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
  v_change text := CASE TG_OP WHEN 'INSERT' THEN 'created' WHEN 'UPDATE' THEN 'updated' ELSE 'deleted' END;
  v_kind text := TG_ARGV[0];
  v_entity uuid;
  v_task uuid;
  v_state text;
BEGIN
  IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
  CASE v_kind
    WHEN 'task' THEN
      v_entity := r.id; v_task := r.id;
      v_state := CASE WHEN r.archived_at IS NULL THEN 'active' ELSE 'archived' END;
    WHEN 'session' THEN
      v_entity := r.id; v_task := r.task_id; v_state := r.state;
    WHEN 'execution' THEN
      -- A session deleted with its task may be gone already: the task is then unknown (null).
      v_entity := r.id; v_state := r.status;
      SELECT s.task_id INTO v_task FROM sessions s WHERE s.id = r.session_id;
    ELSE -- merge, cleanup_job
      v_entity := r.operation_id; v_task := r.task_id; v_state := r.state;
  END CASE;
  IF TG_OP = 'DELETE' THEN v_state := NULL; END IF;
  INSERT INTO events (kind, entity_id, task_id, change, state) VALUES (v_kind, v_entity, v_task, v_change, v_state);
  PERFORM pg_notify('tws_events', '');
  RETURN NULL;
END $$;

-- Updates emit only when a column a reader sees changed: never for last_activity_at, updated_at
-- or other bookkeeping, which hot paths (admission, heartbeats) write often. The WHEN is checked
-- without calling the function.
CREATE TRIGGER tasks_events AFTER INSERT OR DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION record_event('task');
CREATE TRIGGER tasks_events_update AFTER UPDATE ON tasks FOR EACH ROW
  WHEN (OLD.archived_at IS DISTINCT FROM NEW.archived_at OR OLD.title IS DISTINCT FROM NEW.title
    OR OLD.board_id IS DISTINCT FROM NEW.board_id OR OLD.pinned_at IS DISTINCT FROM NEW.pinned_at
    OR OLD.disk_quota_bytes IS DISTINCT FROM NEW.disk_quota_bytes OR OLD.workspace_mode IS DISTINCT FROM NEW.workspace_mode)
  EXECUTE FUNCTION record_event('task');

CREATE TRIGGER sessions_events AFTER INSERT OR DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION record_event('session');
CREATE TRIGGER sessions_events_update AFTER UPDATE ON sessions FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.name IS DISTINCT FROM NEW.name
    OR OLD.resume_count IS DISTINCT FROM NEW.resume_count OR OLD.environment_id IS DISTINCT FROM NEW.environment_id)
  EXECUTE FUNCTION record_event('session');

CREATE TRIGGER executions_events AFTER INSERT OR DELETE ON executions FOR EACH ROW EXECUTE FUNCTION record_event('execution');
CREATE TRIGGER executions_events_update AFTER UPDATE ON executions FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.exit_code IS DISTINCT FROM NEW.exit_code
    OR OLD.outcome IS DISTINCT FROM NEW.outcome OR OLD.ended_at IS DISTINCT FROM NEW.ended_at)
  EXECUTE FUNCTION record_event('execution');

-- A merge is a git operation of kind merge (an undo shows as its merge becoming `undone`).
CREATE TRIGGER git_operations_events_insert AFTER INSERT ON git_operations FOR EACH ROW
  WHEN (NEW.kind = 'merge') EXECUTE FUNCTION record_event('merge');
CREATE TRIGGER git_operations_events_delete AFTER DELETE ON git_operations FOR EACH ROW
  WHEN (OLD.kind = 'merge') EXECUTE FUNCTION record_event('merge');
CREATE TRIGGER git_operations_events_update AFTER UPDATE ON git_operations FOR EACH ROW
  WHEN (NEW.kind = 'merge' AND (OLD.state IS DISTINCT FROM NEW.state OR OLD.undone_at IS DISTINCT FROM NEW.undone_at))
  EXECUTE FUNCTION record_event('merge');

CREATE TRIGGER cleanup_jobs_events AFTER INSERT OR DELETE ON cleanup_jobs FOR EACH ROW EXECUTE FUNCTION record_event('cleanup_job');
CREATE TRIGGER cleanup_jobs_events_update AFTER UPDATE ON cleanup_jobs FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.attempts IS DISTINCT FROM NEW.attempts
    OR OLD.next_attempt_at IS DISTINCT FROM NEW.next_attempt_at OR OLD.batch_workflow_id IS DISTINCT FROM NEW.batch_workflow_id)
  EXECUTE FUNCTION record_event('cleanup_job');

-- Down Migration
-- Forward-only: this project never runs down migrations.

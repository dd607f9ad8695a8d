-- Up Migration
-- The board's facts of a task (db/task-attention.ts), read for every task of a list: each an index
-- probe by task. Sessions by (task_id, state) and (task_id, created_at, id), merges by (task_id,
-- created_at) and the one active cleanup job per task have their indexes already; saved work in
-- conflict had none by task (its indexes are by repository, and by task only for work still to restore).
CREATE INDEX saved_work_conflict_by_task ON saved_work (task_id, saved_at DESC) WHERE restore = 'conflict';

-- A restore's outcome is a fact of its task (attention `restore_conflict`): a change of it tells
-- GET /v1/events readers that the task changed, as the task's own columns do (migration 036).
CREATE FUNCTION record_task_fact_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_state text;
BEGIN
  SELECT CASE WHEN archived_at IS NULL THEN 'active' ELSE 'archived' END INTO v_state FROM tasks WHERE id = NEW.task_id;
  -- Saved work outlives its task: a deleted task has no change to tell.
  IF NOT FOUND THEN RETURN NULL; END IF;
  INSERT INTO events (kind, entity_id, task_id, change, state) VALUES ('task', NEW.task_id, NEW.task_id, 'updated', v_state);
  PERFORM pg_notify('tws_events', '');
  RETURN NULL;
END $$;
CREATE TRIGGER saved_work_restore_events AFTER UPDATE ON saved_work FOR EACH ROW
  WHEN (OLD.restore IS DISTINCT FROM NEW.restore) EXECUTE FUNCTION record_task_fact_event();

-- Down Migration
-- Forward-only: this project never runs down migrations.

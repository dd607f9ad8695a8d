/**
 * The change log behind GET /v1/events (migration 1700000000036): rows the triggers write, read
 * in id order. Ids come from a sequence, so a transaction that took an id may commit after one
 * that took a later id: a reader that sees a gap holds back until every transaction that could
 * still fill it has ended (`settledSince`), and only then moves past it.
 */
import type pg from 'pg';
import type { Db } from './pool';

export type EventKind = 'task' | 'session' | 'execution' | 'merge' | 'cleanup_job';

export interface ChangeEvent {
  id: number;
  kind: EventKind;
  entityId: string;
  taskId: string | null;
  change: 'created' | 'updated' | 'deleted';
  state: string | null;
}

/** The last day, and at most this many rows: what a reconnecting client can catch up on. */
const EVENT_RETENTION = { hours: 24, rows: 100_000 };

interface EventRow {
  id: string;
  kind: EventKind;
  entity_id: string;
  task_id: string | null;
  change: ChangeEvent['change'];
  state: string | null;
}

const eventOf = (row: EventRow): ChangeEvent => ({
  id: Number(row.id),
  kind: row.kind,
  entityId: row.entity_id,
  taskId: row.task_id,
  change: row.change,
  state: row.state,
});

export interface EventBatch {
  events: ChangeEvent[];
  /** The read's snapshot: every transaction below `xmin` had ended; every one that could commit later is at or above `xmax`. */
  xmin: bigint;
  xmax: bigint;
}

/** Rows after `afterId`, oldest first, with the snapshot they were read in (one statement, one snapshot). */
export async function readEventsAfter(db: Db | pg.Client, afterId: number, limit: number): Promise<EventBatch> {
  const res = await db.query<EventRow & { xmin: string; xmax: string }>(
    `SELECT e.id, e.kind, e.entity_id, e.task_id, e.change, e.state, s.xmin, s.xmax
       FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin,
                    pg_snapshot_xmax(pg_current_snapshot())::text AS xmax) s
       LEFT JOIN LATERAL (SELECT * FROM events WHERE id > $1 ORDER BY id LIMIT $2) e ON true
      ORDER BY e.id`,
    [afterId, limit],
  );
  const first = res.rows[0]!;
  return {
    events: res.rows.filter((row) => row.id !== null).map(eventOf),
    xmin: BigInt(first.xmin),
    xmax: BigInt(first.xmax),
  };
}

/** Rows in (afterId, throughId], oldest first: a reconnecting client's replay, below a settled horizon. */
export async function readEventRange(
  db: Db,
  afterId: number,
  throughId: number,
  limit: number,
): Promise<ChangeEvent[]> {
  const res = await db.query<EventRow>(
    `SELECT id, kind, entity_id, task_id, change, state FROM events WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`,
    [afterId, throughId, limit],
  );
  return res.rows.map(eventOf);
}

/** The newest id there is (0 for none), where a reader starts, with the snapshot it was read in. */
export async function newestEvent(db: Db | pg.Client): Promise<{ id: number; xmax: bigint }> {
  const res = await db.query<{ id: string; xmax: string }>(
    `SELECT coalesce(max(id), 0)::text AS id, pg_snapshot_xmax(pg_current_snapshot())::text AS xmax FROM events`,
  );
  return { id: Number(res.rows[0]!.id), xmax: BigInt(res.rows[0]!.xmax) };
}

/** The oldest id retained, or null when none is. */
export async function oldestEventId(db: Db): Promise<number | null> {
  const res = await db.query<{ id: string | null }>('SELECT min(id)::text AS id FROM events');
  return res.rows[0]!.id === null ? null : Number(res.rows[0]!.id);
}

/** Drops what is past retention; a periodic sweep of a small table, never a writer's work. */
export async function pruneEvents(db: Db | pg.Client): Promise<number> {
  const res = await db.query(
    `DELETE FROM events
      WHERE at < now() - make_interval(hours => $1)
         OR id <= (SELECT max(id) FROM events) - $2`,
    [EVENT_RETENTION.hours, EVENT_RETENTION.rows],
  );
  return res.rowCount ?? 0;
}

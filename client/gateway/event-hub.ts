/**
 * One reader of the change log per gateway process (db/events.ts), fanning each new row out to
 * the /v1/events streams it serves. It holds one PostgreSQL connection of its own, LISTENing on
 * `tws_events`: a notification (or a reconnect, after PostgreSQL came back) makes it read every
 * row after the last it delivered, so a notification lost while the connection was down loses
 * no event. `horizon` is the id below which every row is final: a replay reads up to it from the
 * table, and everything after it comes live.
 */
import pg from 'pg';
import { newestEvent, pruneEvents, readEventsAfter, type ChangeEvent } from '../../db/events';

/** Where the hub says what happened to its connection (the gateway's logger). */
export type HubLog = Record<'info' | 'warn' | 'debug', (details: object, message: string) => void>;

export interface EventSubscriber {
  /** Events in id order, each once; false: this subscriber is done (the hub forgets it). */
  deliver(events: ChangeEvent[]): boolean;
  /** The hub closed: end the stream. */
  end(): void;
}

export interface EventHub {
  /** Starts the reader on first use; resolves once `horizon` is final. */
  ready(): Promise<void>;
  readonly horizon: number;
  /** Adds a subscriber that gets every event after `horizon` as it is now; returns its removal. */
  subscribe(subscriber: EventSubscriber): () => void;
  close(): Promise<void>;
}

const BATCH = 500;
/** While a gap waits for its transactions to end: they commit within milliseconds on a launch path. */
const GAP_RECHECK_MS = 25;
/** A gap no transaction filled by now is given up on (logged): a stuck transaction must not stall every stream. */
const GAP_GIVE_UP_MS = 30_000;
const RECONNECT_MS = { first: 250, max: 5_000 };
const PRUNE_EVERY_MS = 10 * 60_000;
/** The connection's name in pg_stat_activity, for an operator (or a test) to find it. */
export const LISTENER_NAME = 'tws-events';

export function createEventHub(databaseUrl: string, log: HubLog): EventHub {
  const subscribers = new Set<EventSubscriber>();
  let client: pg.Client | null = null;
  let closed = false;
  let started: Promise<void> | null = null;
  let cursor = 0;
  /** The gap right after `cursor`: the snapshot that first saw a row past it, and since when. */
  let gap: { xmax: bigint; since: number } | null = null;
  let reading: Promise<void> | null = null;
  let readAgain = false;
  let reconnectWait = RECONNECT_MS.first;
  const timers = new Set<NodeJS.Timeout>();

  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

  const fanOut = (events: ChangeEvent[]) => {
    if (events.length === 0) return;
    for (const subscriber of subscribers) if (!subscriber.deliver(events)) subscribers.delete(subscriber);
  };

  /** Reads and delivers every settled row after `cursor`; a pending gap re-reads shortly. */
  const readNew = async (db: pg.Client): Promise<void> => {
    for (;;) {
      const batch = await readEventsAfter(db, cursor, BATCH);
      const settled: ChangeEvent[] = [];
      let waiting = false;
      for (const event of batch.events) {
        if (event.id !== cursor + 1) {
          gap ??= { xmax: batch.xmax, since: Date.now() };
          // Every transaction that could have taken an id in the gap had ended before this read.
          const over = batch.xmin >= gap.xmax;
          if (!over && Date.now() - gap.since < GAP_GIVE_UP_MS) {
            waiting = true;
            break;
          }
          if (!over) log.warn({ after: cursor, next: event.id }, 'events: a gap stayed open; moving past it');
        }
        settled.push(event);
        cursor = event.id;
        gap = null;
      }
      fanOut(settled);
      if (waiting) return later(GAP_RECHECK_MS, () => void read());
      if (batch.events.length < BATCH) return;
    }
  };

  /** One read at a time; a notification during a read reads again after it. */
  const read = async (): Promise<void> => {
    if (reading) {
      readAgain = true;
      return;
    }
    const db = client;
    if (!db || closed) return;
    reading = (async () => {
      do {
        readAgain = false;
        await readNew(db);
      } while (readAgain && !closed);
    })();
    try {
      await reading;
    } catch (err) {
      // The connection broke (its 'end' reconnects and reads again), or a read failed on a live one.
      if (!closed) log.warn({ err }, 'events: reading the change log failed');
    } finally {
      reading = null;
    }
  };

  const prune = async () => {
    const db = client;
    if (db && !closed) {
      try {
        const pruned = await pruneEvents(db);
        if (pruned > 0) log.info({ pruned }, 'events: pruned past retention');
      } catch (err) {
        log.warn({ err }, 'events: pruning failed; tried again later');
      }
    }
    if (!closed) later(PRUNE_EVERY_MS, () => void prune());
  };

  const connect = async (): Promise<void> => {
    const db = new pg.Client({ connectionString: databaseUrl, keepAlive: true, application_name: LISTENER_NAME });
    db.on('error', (err) => log.warn({ err }, 'events: the listening connection failed'));
    db.on('notification', () => void read());
    db.on('end', () => {
      // Only the live connection reconnects: one that failed to open is retried by its opener.
      if (client !== db) return;
      client = null;
      if (!closed) later(reconnectWait, () => void reconnect());
    });
    try {
      await db.connect();
      await db.query('LISTEN tws_events');
    } catch (err) {
      await endQuietly(db, log);
      throw err;
    }
    if (closed) return endQuietly(db, log);
    client = db;
    reconnectWait = RECONNECT_MS.first;
  };

  /** After PostgreSQL (or the connection) came back: listen again, then catch up from the table. */
  const reconnect = async (): Promise<void> => {
    if (closed) return;
    try {
      await connect();
      log.info({ after: cursor }, 'events: listening again; catching up');
      await read();
    } catch (err) {
      log.warn({ err, retryInMs: reconnectWait }, 'events: cannot listen yet');
      reconnectWait = Math.min(reconnectWait * 2, RECONNECT_MS.max);
      later(reconnectWait, () => void reconnect());
    }
  };

  /**
   * The first read starts at the newest row, once every transaction that could still commit an
   * older one has ended: from then on the table below `cursor` is final, for replays to read.
   */
  const start = async (): Promise<void> => {
    await connect();
    const db = client;
    if (!db) throw new Error('the event hub is closed');
    const newest = await newestEvent(db);
    cursor = newest.id;
    while (!closed && (await readEventsAfter(db, cursor, 1)).xmin < newest.xmax)
      await new Promise((resolve) => later(GAP_RECHECK_MS, () => resolve(undefined)));
    void prune();
    await read();
  };

  return {
    ready() {
      if (closed) return Promise.reject(new Error('the event hub is closed'));
      started ??= start().catch((err: unknown) => {
        // The next stream tries again; the connection made (if any) is ended.
        started = null;
        const db = client;
        client = null;
        if (db) void endQuietly(db, log);
        throw err;
      });
      return started;
    },
    get horizon() {
      return cursor;
    },
    subscribe(subscriber) {
      subscribers.add(subscriber);
      return () => subscribers.delete(subscriber);
    },
    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const subscriber of subscribers) subscriber.end();
      subscribers.clear();
      const db = client;
      client = null;
      if (db) await endQuietly(db, log);
    },
  };
}

/** Ends a connection that is being given up; one that already broke says so in the log. */
async function endQuietly(db: pg.Client, log: HubLog): Promise<void> {
  try {
    await db.end();
  } catch (err) {
    log.debug({ err }, 'events: ending the listening connection failed');
  }
}

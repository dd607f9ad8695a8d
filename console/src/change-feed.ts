/**
 * The live feed of changes (GET /v1/events, console-contract): read with fetch() and a stream
 * reader, so the token travels in the Authorization header. It reconnects by itself with
 * `Last-Event-ID` after the server's `retry`, says whether it is live, connecting or lost, and,
 * on a service without the route (404), falls back to telling the pages to refetch on an interval.
 */
import type { Api } from './api';
import { createSseParser, readChange, type ChangeEvent } from './sse-parser';

export type ConnectionState = 'live' | 'connecting' | 'lost';

/** A change, or `reset`: the feed lost its place (or polls), and everything is to be read again. */
export type FeedSignal = { type: 'change'; change: ChangeEvent } | { type: 'reset' };

export interface ChangeFeed {
  subscribe(listener: (signal: FeedSignal) => void): () => void;
  onState(listener: (state: ConnectionState) => void): () => void;
  readonly state: ConnectionState;
  /** Told by a page whose request failed for want of a connection: the indicator says lost until the next success. */
  reportLost(): void;
  reportAlive(): void;
  close(): void;
}

const POLL_MS = 10_000;
const DEFAULT_RETRY_MS = 2_000;
const MAX_RETRY_MS = 30_000;

/** Calls `then` each time the feed is live again after it was lost (the first connect is not a comeback). */
export function onComeback(feed: ChangeFeed, then: () => void): () => void {
  let was = feed.state;
  return feed.onState((state) => {
    if (state === 'live' && was === 'lost') then();
    was = state;
  });
}

export function openChangeFeed(api: Api): ChangeFeed {
  const listeners = new Set<(signal: FeedSignal) => void>();
  const stateListeners = new Set<(state: ConnectionState) => void>();
  let state: ConnectionState = 'connecting';
  let closed = false;
  let lastEventId: string | null = null;
  let retryMs = DEFAULT_RETRY_MS;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const abort = new AbortController();

  const setState = (next: ConnectionState) => {
    if (next === state) return;
    state = next;
    for (const listener of stateListeners) listener(next);
  };
  const emit = (signal: FeedSignal) => {
    for (const listener of listeners) listener(signal);
  };
  const later = (ms: number, run: () => void) => {
    if (closed) return;
    timer = setTimeout(run, ms);
  };

  async function connect(): Promise<void> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId) headers['last-event-id'] = lastEventId;
    let response: Response;
    try {
      response = await api.stream('/v1/events', headers, abort.signal);
    } catch (err) {
      if (closed) return;
      const status = (err as { status?: number }).status;
      if (status === 404) return poll(true);
      return lost();
    }
    const parser = createSseParser();
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    setState('live');
    failures = 0;
    // After a gap (a reconnect without an id to resume from) the pages read everything again.
    if (!lastEventId) emit({ type: 'reset' });
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const event of parser.push(value)) {
          if (event.id) lastEventId = event.id;
          if (event.event === 'reset') emit({ type: 'reset' });
          const change = event.event === 'change' ? readChange(event.data) : null;
          if (change) emit({ type: 'change', change });
        }
        if (parser.retryMs !== null) retryMs = parser.retryMs;
      }
    } catch {
      // the connection broke: reconnect below
    }
    if (!closed) lost();
  }

  function lost() {
    failures += 1;
    setState(failures > 1 ? 'lost' : 'connecting');
    later(Math.min(retryMs * failures, MAX_RETRY_MS), () => void connect());
  }

  /** No event route on this service: the pages refetch every POLL_MS; the indicator follows their requests. */
  function poll(first: boolean) {
    if (first) setState('live');
    emit({ type: 'reset' });
    later(POLL_MS, () => poll(false));
  }

  void connect();
  return {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onState(listener) {
      stateListeners.add(listener);
      return () => stateListeners.delete(listener);
    },
    get state() {
      return state;
    },
    reportLost: () => setState('lost'),
    reportAlive: () => {
      if (state === 'lost' && failures === 0) setState('live');
    },
    close() {
      closed = true;
      abort.abort();
      if (timer) clearTimeout(timer);
    },
  };
}

/**
 * The console's live feed (console/src/change-feed.ts) against a stand-in for GET /v1/events: it
 * hands on changes and resets, resumes with Last-Event-ID, says lost and recovers by itself, and
 * falls back to refetching on an interval where the route answers 404.
 */
import { describe, expect, it } from 'vitest';
import { ApiFailure, type Api } from '../console/src/api';
import {
  onComeback,
  openChangeFeed,
  type ChangeFeed,
  type ConnectionState,
  type FeedSignal,
} from '../console/src/change-feed';

type Answer = string | number | 'throw';

/** An Api whose stream() answers each connection in turn: SSE text (then the end), an HTTP status, or no connection. */
function fakeApi(answers: Answer[]) {
  const asked: Record<string, string>[] = [];
  const api = {
    token: 't',
    stream: async (path: string, headers: Record<string, string>) => {
      expect(path).toBe('/v1/events');
      asked.push(headers);
      const answer = answers.shift() ?? 'throw';
      if (answer === 'throw') throw new ApiFailure(0, { code: 'connection_lost', message: 'x', action: 'retry' });
      if (typeof answer === 'number') throw new ApiFailure(answer, { code: 'not_found', message: 'x', action: 'none' });
      return new Response(answer, { headers: { 'content-type': 'text/event-stream' } });
    },
  } as unknown as Api;
  return { api, asked };
}

const until = async (check: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

const change = (id: string) =>
  `id: ${id}\nevent: change\ndata: {"kind":"task","id":"t${id}","taskId":"t${id}","change":"updated","state":"active"}\n\n`;

describe('the console follows /v1/events and recovers by itself [console events]', () => {
  it('hands on changes and resets, and resumes after a drop with the last event id', async () => {
    const { api, asked } = fakeApi([
      `retry: 10\n\n${change('1')}: keepalive\n\n${change('2')}`,
      'throw',
      'throw',
      `event: reset\ndata: {}\n\n${change('3')}`,
    ]);
    const feed = openChangeFeed(api);
    const signals: FeedSignal[] = [];
    const states: ConnectionState[] = [];
    feed.subscribe((s) => signals.push(s));
    feed.onState((s) => states.push(s));
    await until(() => signals.some((s) => s.type === 'change' && s.change.id === 't3'));
    feed.close();
    expect(signals.map((s) => (s.type === 'change' ? s.change.id : 'reset'))).toEqual([
      'reset',
      't1',
      't2',
      'reset',
      't3',
    ]);
    // The first connection has no id to resume from; the later ones resume after the last event seen.
    expect(asked[0]).not.toHaveProperty('last-event-id');
    expect(asked.slice(1).map((h) => h['last-event-id'])).toEqual(['2', '2', '2']);
    // One failure is a reconnect; a second in a row is a lost connection; then live again, by itself.
    // (The stand-in's last stream then ends too: a reconnect again.)
    expect(states.slice(0, 4)).toEqual(['live', 'connecting', 'lost', 'live']);
  });

  it('falls back to a reset on an interval where the service has no event route (404), and stays live', async () => {
    const { api, asked } = fakeApi([404]);
    const feed = openChangeFeed(api);
    const signals: FeedSignal[] = [];
    feed.subscribe((s) => signals.push(s));
    await until(() => feed.state === 'live');
    feed.close();
    expect(asked).toHaveLength(1);
    // A page whose read fails for want of a connection says lost; its next success says live.
    const again = openChangeFeed(fakeApi([404]).api);
    await until(() => again.state === 'live');
    again.reportLost();
    expect(again.state).toBe('lost');
    again.reportAlive();
    expect(again.state).toBe('live');
    again.close();
  });
});

describe('a comeback', () => {
  it('is live after lost, not the first connect nor a live after connecting', () => {
    const listeners = new Set<(state: ConnectionState) => void>();
    const feed = {
      state: 'connecting' as ConnectionState,
      onState: (listener: (state: ConnectionState) => void) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    } as unknown as ChangeFeed;
    let comebacks = 0;
    const unwatch = onComeback(feed, () => (comebacks += 1));
    const say = (state: ConnectionState) => listeners.forEach((listener) => listener(state));
    say('live');
    expect(comebacks).toBe(0);
    say('lost');
    say('connecting');
    say('live');
    expect(comebacks).toBe(0);
    say('lost');
    say('live');
    expect(comebacks).toBe(1);
    unwatch();
    say('lost');
    say('live');
    expect(comebacks).toBe(1);
  });
});

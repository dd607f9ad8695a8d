/**
 * One client's /v1/events stream: Server-Sent Events frames on a raw response, a keepalive
 * comment, and a bound on what waits for a slow reader. A client that does not keep up is
 * dropped rather than buffered without end; it reconnects with Last-Event-ID and loses nothing.
 */
import type { ServerResponse } from 'node:http';
import type { ChangeEvent } from '../../db/events';
import type { EventSubscriber } from './event-hub';

const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  // nginx and its kind pass each frame on instead of holding them.
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
};
/** How long a disconnected client waits before reconnecting (the `retry:` sent on connect). */
const RECONNECT_MS = 2_000;
const KEEPALIVE_MS = 15_000;
/** Bytes the socket may hold unsent, and events that may wait while a replay is written. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const MAX_QUEUED_EVENTS = 10_000;

/** Only ids, kinds and states: the client refetches the resource through the API. */
function changeFrame(event: ChangeEvent): string {
  const data = {
    kind: event.kind,
    id: event.entityId,
    taskId: event.taskId,
    change: event.change,
    state: event.state,
  };
  return `id: ${event.id}\nevent: change\ndata: ${JSON.stringify(data)}\n\n`;
}

/** "Refetch everything": the id asked for is not retained (or unknown); the stream goes on from `horizon`. */
const resetFrame = (horizon: number): string => `id: ${horizon}\nevent: reset\ndata: {}\n\n`;

export class EventStream implements EventSubscriber {
  /** Live events that arrive while the replay is written, sent after it; null once live. */
  private queued: ChangeEvent[] | null = [];
  private closed = false;
  private readonly keepalive: NodeJS.Timeout;

  constructor(
    private readonly raw: ServerResponse,
    private readonly readable: (event: ChangeEvent) => boolean,
  ) {
    raw.writeHead(200, EVENT_STREAM_HEADERS);
    raw.write(`retry: ${RECONNECT_MS}\n\n`);
    this.keepalive = setInterval(() => this.write(': keepalive\n\n'), KEEPALIVE_MS);
    raw.on('close', () => this.stop());
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  deliver(events: ChangeEvent[]): boolean {
    if (this.closed) return false;
    const mine = events.filter(this.readable);
    if (this.queued) {
      this.queued.push(...mine);
      if (this.queued.length > MAX_QUEUED_EVENTS) this.drop();
    } else if (mine.length > 0) this.write(mine.map(changeFrame).join(''));
    return !this.closed;
  }

  /** Writes replayed events, waiting for the socket to drain between pages. */
  async replay(events: ChangeEvent[]): Promise<void> {
    if (this.closed) return;
    const frames = events.filter(this.readable).map(changeFrame).join('');
    if (frames && !this.raw.write(frames) && !this.closed) await this.drained();
  }

  reset(horizon: number): void {
    this.write(resetFrame(horizon));
  }

  /** After the replay: what came meanwhile, then each event as it comes. */
  goLive(): void {
    const queued = this.queued ?? [];
    this.queued = null;
    if (queued.length > 0) this.write(queued.map(changeFrame).join(''));
  }

  end(): void {
    if (this.closed) return;
    this.stop();
    this.raw.end();
  }

  /** A client that cannot keep up, or whose replay failed: it reconnects with its Last-Event-ID. */
  drop(): void {
    if (this.closed) return;
    this.stop();
    this.raw.destroy();
  }

  private write(text: string): void {
    if (this.closed) return;
    this.raw.write(text);
    if (this.raw.writableLength > MAX_BUFFERED_BYTES) this.drop();
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const finish = () => {
        this.raw.off('drain', finish);
        this.raw.off('close', finish);
        resolve();
      };
      this.raw.on('drain', finish);
      this.raw.on('close', finish);
    });
  }

  private stop(): void {
    this.closed = true;
    clearInterval(this.keepalive);
  }
}

/** A /v1/events client for tests: fetch() and a small Server-Sent Events parser, as the console reads it. */
import { USER_TOKEN } from './harness';

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export interface Change {
  eventId: number;
  kind: string;
  id: string;
  taskId: string | null;
  change: string;
  state: string | null;
}

export class EventReader {
  /** Everything the server sent, as sent. */
  raw = '';
  readonly events: SseEvent[] = [];
  retry: number | null = null;
  ended = false;
  error: Error | null = null;
  private wake: () => void = () => {};
  private readonly abort = new AbortController();

  private constructor(readonly response: Response) {}

  /** `at`: a harness, or any gateway's base URL. */
  static async open(
    at: { baseUrl: string },
    opts: { lastEventId?: string; token?: string | null } = {},
  ): Promise<EventReader> {
    const headers: Record<string, string> = {};
    const token = opts.token === undefined ? USER_TOKEN : opts.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
    const controller = new AbortController();
    const response = await fetch(`${at.baseUrl}/v1/events`, { headers, signal: controller.signal });
    const reader = new EventReader(response);
    reader.abort.signal.addEventListener('abort', () => controller.abort());
    if (response.ok) void reader.pump();
    return reader;
  }

  /** The change events received, oldest first. */
  get changes(): Change[] {
    return this.events
      .filter((e) => e.event === 'change')
      .map((e) => ({ eventId: Number(e.id), ...(JSON.parse(e.data) as Omit<Change, 'eventId'>) }));
  }

  get lastId(): string | undefined {
    return this.events.filter((e) => e.id !== undefined).at(-1)?.id;
  }

  /** Waits until `predicate` holds of the events received so far (or fails naming `what`). */
  async until<T>(find: (reader: EventReader) => T | undefined | false, what: string, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find(this);
      if (found) return found;
      if (this.ended) throw new Error(`the stream ended before ${what}; received: ${this.raw}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; received: ${this.raw}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** The first change of this kind, entity and change (and state, when given). */
  change(kind: string, id: string, change: string, state?: string): Promise<Change> {
    return this.until(
      (r) =>
        r.changes.find((c) => c.kind === kind && c.id === id && c.change === change && (!state || c.state === state)),
      `${kind} ${id} ${change}${state ? ` (${state})` : ''}`,
    );
  }

  close(): void {
    this.abort.abort();
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    let pending = '';
    try {
      for await (const chunk of this.response.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        this.raw += text;
        pending += text;
        let end: number;
        while ((end = pending.indexOf('\n\n')) !== -1) {
          this.parse(pending.slice(0, end));
          pending = pending.slice(end + 2);
        }
        this.wake();
      }
    } catch (err) {
      // The server dropped the stream (or the test closed it): `ended` says so to every wait.
      if (!this.abort.signal.aborted) this.error = err as Error;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private parse(block: string): void {
    const event: SseEvent = { event: 'message', data: '' };
    let fields = 0;
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const at = line.indexOf(':');
      const name = at === -1 ? line : line.slice(0, at);
      const value = at === -1 ? '' : line.slice(at + 1).replace(/^ /, '');
      fields++;
      if (name === 'id') event.id = value;
      else if (name === 'event') event.event = value;
      else if (name === 'data') event.data += event.data ? `\n${value}` : value;
      else if (name === 'retry') this.retry = Number(value);
    }
    if (fields > 0 && (event.data || event.id !== undefined)) this.events.push(event);
  }
}

/**
 * The Server-Sent Events wire format (the WHATWG "event stream" rules) read from text chunks as
 * they arrive: the console reads /v1/events with fetch() so that the token goes in a header,
 * never a URL, and EventSource cannot send one. Pure: no DOM, no network.
 */
interface ServerEvent {
  /** The last `id:` seen so far (ids persist across events, as the format says); null before any. */
  id: string | null;
  /** `message` when the event names none. */
  event: string;
  data: string;
}

export interface SseParser {
  /** Feeds the next chunk of text; returns the events it completed, in order. */
  push(chunk: string): ServerEvent[];
  /** The `retry:` the server asked for last, in milliseconds (null until it asks). */
  readonly retryMs: number | null;
  readonly lastEventId: string | null;
}

export function createSseParser(): SseParser {
  let buffer = '';
  let lastEventId: string | null = null;
  let retryMs: number | null = null;
  let event = '';
  let data: string[] = [];
  let started = false;

  function line(text: string, out: ServerEvent[]) {
    if (text === '') {
      // A blank line ends an event; one without data is no event (a keepalive, an id alone).
      if (data.length > 0) out.push({ id: lastEventId, event: event || 'message', data: data.join('\n') });
      event = '';
      data = [];
      return;
    }
    if (text.startsWith(':')) return; // a comment: `: keepalive`
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        event = value;
        break;
      case 'data':
        data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) retryMs = Number(value);
        break;
      default: // unknown fields are ignored, as the format says
    }
  }

  return {
    push(chunk) {
      buffer += chunk;
      if (!started && buffer.length > 0) {
        // A byte order mark may open the stream once.
        if (buffer.startsWith('\uFEFF')) buffer = buffer.slice(1);
        started = true;
      }
      const out: ServerEvent[] = [];
      // Lines end in \r\n, \n or \r; a \r at the very end may be half of a \r\n still on its way.
      for (;;) {
        const match = /\r\n|\n|\r/.exec(buffer);
        if (!match) break;
        if (match[0] === '\r' && match.index === buffer.length - 1) break;
        line(buffer.slice(0, match.index), out);
        buffer = buffer.slice(match.index + match[0].length);
      }
      return out;
    },
    get retryMs() {
      return retryMs;
    },
    get lastEventId() {
      return lastEventId;
    },
  };
}

/** A change event's data as the contract gives it: only ids, kinds and states (console-contract). */
export interface ChangeEvent {
  kind: 'task' | 'session' | 'execution' | 'merge' | 'cleanup_job';
  id: string;
  taskId: string | null;
  change: 'created' | 'updated' | 'deleted';
  state: string | null;
}

const KINDS = new Set(['task', 'session', 'execution', 'merge', 'cleanup_job']);

/** The change an event carries, or null for data that is not one (never thrown: a bad event is skipped). */
export function readChange(data: string): ChangeEvent | null {
  try {
    const value = JSON.parse(data) as Partial<ChangeEvent>;
    if (typeof value !== 'object' || value === null) return null;
    if (typeof value.kind !== 'string' || !KINDS.has(value.kind) || typeof value.id !== 'string') return null;
    return {
      kind: value.kind,
      id: value.id,
      taskId: typeof value.taskId === 'string' ? value.taskId : null,
      change: value.change === 'created' || value.change === 'deleted' ? value.change : 'updated',
      state: typeof value.state === 'string' ? value.state : null,
    };
  } catch {
    return null;
  }
}

/** The console's reader of /v1/events (console/src/sse-parser.ts): the event-stream format, chunk by chunk. */
import { describe, expect, it } from 'vitest';
import { createSseParser, readChange } from '../console/src/sse-parser';

const change = { kind: 'task', id: 'a', taskId: 'a', change: 'updated', state: 'active' };

describe('the console reads the event stream as the format says [console events]', () => {
  it('reads events whole however the chunks cut them, ids kept, comments and keepalives skipped', () => {
    const stream = `retry: 2000\n\n: keepalive\n\nid: 7\nevent: change\ndata: ${JSON.stringify(change)}\n\nid: 8\nevent: reset\ndata: {}\n\n`;
    for (const size of [1, 2, 3, 7, 64, stream.length]) {
      const parser = createSseParser();
      const events = [];
      for (let at = 0; at < stream.length; at += size) events.push(...parser.push(stream.slice(at, at + size)));
      expect(events, `chunks of ${size}`).toEqual([
        { id: '7', event: 'change', data: JSON.stringify(change) },
        { id: '8', event: 'reset', data: '{}' },
      ]);
      expect(parser.retryMs).toBe(2000);
      expect(parser.lastEventId).toBe('8');
    }
  });

  it('takes \\r\\n and \\r line ends, a \\r\\n split across chunks, a BOM, several data lines and a field without a space', () => {
    const parser = createSseParser();
    expect(parser.push('\uFEFFid:1\r\ndata:one\r')).toEqual([]);
    // A \r last in a chunk may be the first half of a \r\n: the line it ends waits for the next byte.
    expect(parser.push('\ndata: two\r\r')).toEqual([]);
    expect(parser.push('data\n\n')).toEqual([
      { id: '1', event: 'message', data: 'one\ntwo' },
      { id: '1', event: 'message', data: '' },
    ]);
  });

  it('keeps the last id when an event has none, ignores unknown fields and a bad retry, and sends no event without data', () => {
    const parser = createSseParser();
    expect(parser.push('id: 4\n\nretry: soon\nfoo: bar\nevent: change\ndata: x\n\n')).toEqual([
      { id: '4', event: 'change', data: 'x' },
    ]);
    expect(parser.retryMs).toBeNull();
  });

  it('reads a change as the contract gives it, and skips data that is not one', () => {
    expect(readChange(JSON.stringify(change))).toEqual(change);
    expect(readChange(JSON.stringify({ ...change, taskId: null, state: null, change: 'deleted' }))).toMatchObject({
      taskId: null,
      state: null,
      change: 'deleted',
    });
    expect(readChange('{}')).toBeNull();
    expect(readChange('not json')).toBeNull();
    expect(readChange(JSON.stringify({ ...change, kind: 'secret' }))).toBeNull();
    expect(readChange('null')).toBeNull();
  });
});

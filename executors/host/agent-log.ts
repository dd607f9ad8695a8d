/**
 * Reading an agent's log as its shim keeps it (executors/host/agent-shim.ts): `<log>.1` (older) and
 * `<log>` (newest), together at most TWS_AGENT_LOG_MAX_BYTES. The gateway reads them where the log
 * folder is its own (the agent's host, or a shared volume).
 */
import { open, readFile, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { lastLines, type LogSource } from '../../domain/agent-log';

/** A log file not written yet (or rotated away) reads as nothing; any other failure is an error, never an empty log. */
function absentAs<T>(read: Promise<T>, absent: T): Promise<T> {
  return read.catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return absent;
    throw err;
  });
}

const readOrEmpty = (file: string) => absentAs(readFile(file), Buffer.alloc(0));

/**
 * The whole kept log, or its last `lines` lines, and the offset in the newest file just past
 * what was read: a follow from there neither repeats nor misses a byte.
 */
async function tailOf(logPath: string, lines: number | null): Promise<{ text: Buffer; offset: number }> {
  const newest = await readOrEmpty(logPath);
  const kept = Buffer.concat([await readOrEmpty(`${logPath}.1`), newest]);
  // The whole log (what the console's page asks for) goes out as read: decoded to a string and
  // encoded back it was two more copies of up to TWS_AGENT_LOG_MAX_BYTES in the gateway's heap per
  // request. Its reader decodes it, as it does the bytes a follow sends after it.
  const text = lines === null ? kept : Buffer.from(lastLines(kept.toString('utf8'), lines));
  return { text, offset: newest.length };
}

const sizeOf = (file: string) =>
  absentAs(
    stat(file).then((s) => s.size),
    0,
  );

async function readFrom(file: string, offset: number): Promise<Buffer> {
  const handle = await absentAs(open(file, 'r'), null);
  if (!handle) return Buffer.alloc(0);
  try {
    const size = (await handle.stat()).size;
    if (size <= offset) return Buffer.alloc(0);
    const buffer = Buffer.alloc(size - offset);
    await handle.read(buffer, 0, buffer.length, offset);
    return buffer;
  } finally {
    await handle.close();
  }
}

/** The part of a log after `offset`, reading a rotation that happened meanwhile. */
async function readSince(logPath: string, offset: number): Promise<{ chunk: Buffer; offset: number }> {
  const parts: Buffer[] = [];
  if ((await sizeOf(logPath)) < offset) {
    parts.push(await readFrom(`${logPath}.1`, offset));
    offset = 0;
  }
  const fresh = await readFrom(logPath, offset);
  parts.push(fresh);
  return { chunk: Buffer.concat(parts), offset: offset + fresh.length };
}

export const localLog = (logPath: string): LogSource => ({
  tail: (lines) => tailOf(logPath, lines),
  since: (offset) => readSince(logPath, offset),
});

/**
 * The output written after `offset`, until the agent has ended (`running` says false) and all
 * of it is read; or until the reader goes away.
 */
export function followLog(source: LogSource, offset: number, running: () => Promise<boolean>, pollMs = 250): Readable {
  let stopped = false;
  const stream = new Readable({ read() {} });
  stream.on('close', () => (stopped = true));
  const step = async (): Promise<boolean> => {
    const read = await source.since(offset);
    offset = read.offset;
    if (read.chunk.length) stream.push(read.chunk);
    return read.chunk.length > 0;
  };
  void (async () => {
    try {
      let checks = 0;
      while (!stopped) {
        const grew = await step();
        // Whether the agent still runs is asked about once a second, and only when nothing came.
        if (!grew && ++checks % Math.max(1, Math.round(1000 / pollMs)) === 0 && !(await running())) {
          await step();
          break;
        }
        await new Promise((r) => setTimeout(r, pollMs));
      }
      stream.push(null);
    } catch (err) {
      stream.destroy(err as Error);
    }
  })();
  return stream;
}

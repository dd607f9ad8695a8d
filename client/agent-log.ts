/**
 * Reading an agent's log as its shim keeps it (activities/agent-shim.ts): `<log>.1` (older) and
 * `<log>` (newest), together at most TWS_AGENT_LOG_MAX_BYTES. The gateway reads them where the log
 * folder is its own (the agent's host, or a shared volume).
 */
import { open, readFile, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';

/** A log file not written yet (or rotated away) reads as nothing; any other failure is an error, never an empty log. */
function absentAs<T>(read: Promise<T>, absent: T): Promise<T> {
  return read.catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return absent;
    throw err;
  });
}

const readOrEmpty = (file: string) => absentAs(readFile(file), Buffer.alloc(0));

/** The whole kept log, or its last `lines` lines. */
export async function tailLog(logPath: string, lines: number | null): Promise<string> {
  const text = Buffer.concat([await readOrEmpty(`${logPath}.1`), await readOrEmpty(logPath)]).toString('utf8');
  if (lines === null) return text;
  if (lines === 0) return '';
  const parts = text.split('\n');
  const trailing = parts[parts.length - 1] === '' ? parts.pop() : undefined;
  return parts.slice(-lines).join('\n') + (trailing === undefined ? '' : '\n');
}

const sizeOf = (file: string) => absentAs(stat(file).then((s) => s.size), 0);

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

/**
 * The output written after this moment, until the agent has ended (`running` says false) and all
 * of it is read; or until the reader goes away. A log that was rotated meanwhile is read to its
 * end under its new name first.
 */
export async function followLog(logPath: string, running: () => Promise<boolean>, pollMs = 250): Promise<Readable> {
  let offset = await sizeOf(logPath);
  let stopped = false;
  const stream = new Readable({ read() {} });
  stream.on('close', () => (stopped = true));
  const step = async (): Promise<boolean> => {
    const size = await sizeOf(logPath);
    if (size < offset) {
      const rest = await readFrom(`${logPath}.1`, offset);
      if (rest.length) stream.push(rest);
      offset = 0;
    }
    const fresh = await readFrom(logPath, offset);
    offset += fresh.length;
    if (fresh.length) stream.push(fresh);
    return fresh.length > 0;
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

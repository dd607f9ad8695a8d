/** Child processes of the benchmark: free ports, the service processes and their logs, stopping them. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import net from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  pid: number;
  logFile: string;
  /** Resolves when a line of stdout contains the text; rejects when the process exits first. */
  waitForOutput(text: string, timeoutMs: number): Promise<void>;
}

/** Starts a command with stdout and stderr appended to a log file, watching stdout for readiness lines. */
export function startLogged(
  name: string,
  command: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; logFile: string },
): ServiceProcess {
  const log = createWriteStream(opts.logFile, { flags: 'a' });
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  let seen = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    // Only the start-up lines matter; keep the buffer small once the service runs.
    if (seen.length < 200_000) seen += chunk.toString('utf8');
  });
  child.once('exit', () => log.end());
  return {
    name,
    child,
    pid: child.pid!,
    logFile: opts.logFile,
    waitForOutput(text, timeoutMs) {
      return new Promise((resolve, reject) => {
        if (seen.includes(text)) return resolve();
        const timer = setTimeout(
          () => finish(new Error(`${name}: no "${text}" within ${timeoutMs} ms (log: ${opts.logFile})`)),
          timeoutMs,
        );
        const onData = () => {
          if (seen.includes(text)) finish();
        };
        const onExit = (code: number | null) =>
          finish(new Error(`${name} exited (${code}) during start-up (log: ${opts.logFile})`));
        const finish = (err?: Error) => {
          clearTimeout(timer);
          child.stdout!.off('data', onData);
          child.off('exit', onExit);
          if (err) reject(err);
          else resolve();
        };
        child.stdout!.on('data', onData);
        child.once('exit', onExit);
      });
    },
  };
}

export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** SIGTERM, then SIGKILL after the grace period. */
export async function stopProcess(child: ChildProcess | null, graceMs = 10_000): Promise<void> {
  if (!child || !isRunning(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Runs fn over items with at most `limit` in flight; results keep the input order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(lanes);
  return results;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

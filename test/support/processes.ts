/** Service processes a crash test kills and replaces: a worker of a harness, a Temporal dev server of its own. */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { expect } from 'vitest';
import { startEmbeddedPostgres, type PostgresService } from '../../client/launcher/postgres-service';
import { resolveTemporalCli } from '../../client/launcher/temporal-cli';
import { SEARCH_ATTRIBUTES } from '../../domain/search-attributes';
import type { Harness } from './harness';

/** The harness's worker as its own process; `cleanups` ends the last one after the file. */
export function killableWorker(h: Harness, cleanups: (() => Promise<void> | void)[]) {
  let worker: ChildProcess = h.spawnWorker();
  cleanups.push(() => void worker.kill('SIGKILL'));
  return {
    async kill() {
      worker.kill('SIGKILL');
      await new Promise((r) => worker.once('exit', r));
    },
    replace() {
      worker = h.spawnWorker();
    },
  };
}

/**
 * A Temporal dev server on this port whose history lives in `dbFile` (killed and started again, it
 * keeps its workflows), answering calls. Besides its own port it binds five it picks at random
 * (metrics, HTTP and its internal services): one taken meanwhile by another process of the run
 * ends it at once. One that exits before it answers is started again, up to three times; its
 * output (`<dbFile>.log`) is in the error when it never answers.
 */
export async function runTemporalDevServer(port: number, dbFile: string): Promise<ChildProcess> {
  const log = `${dbFile}.log`;
  for (let attempt = 1; ; attempt++) {
    const out = openSync(log, 'a');
    const child = spawn(
      resolveTemporalCli(process.cwd()),
      [
        'server',
        'start-dev',
        '--headless',
        '--ip',
        '127.0.0.1',
        '--port',
        String(port),
        '--db-filename',
        dbFile,
        '--log-level',
        'error',
        ...SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]),
      ],
      { stdio: ['ignore', out, out] },
    );
    closeSync(out);
    const alive = () => child.exitCode === null && child.signalCode === null;
    const problem = await waitForEngine(port, alive).then(
      () => null,
      (err: Error) => err.message,
    );
    if (problem === null && alive()) return child;
    const why = alive() ? problem : `it exited (${child.signalCode ?? child.exitCode})`;
    child.kill('SIGKILL');
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));
    if (attempt === 3) {
      const said = readFileSync(log, 'utf8').trim().split('\n').slice(-20).join('\n');
      throw new Error(`the Temporal dev server on port ${port} did not start in 3 tries: ${why}\n${said}`);
    }
  }
}

/** Waits for something to listen on the port; `alive` false (the process that should listen ended) stops the wait. */
async function waitForPort(port: number, alive: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && alive(); i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on port ${port}`);
}

/**
 * A dev server on this port that answers a call, not only one whose port is open: its frontend
 * says "not healthy yet" for a moment after it listens (a harness connecting then failed).
 */
async function waitForEngine(port: number, alive: () => boolean): Promise<void> {
  await waitForPort(port, alive);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const problem = await Connection.connect({ address: `127.0.0.1:${port}`, connectTimeout: 2000 }).then(
      async (connection) => {
        try {
          await connection.workflowService.getSystemInfo({});
          return null;
        } catch (err) {
          return err;
        } finally {
          await connection.close();
        }
      },
      (err: unknown) => err,
    );
    if (problem === null) return;
    if (Date.now() > deadline || !alive())
      throw new Error(`the Temporal dev server on port ${port} does not answer: ${String(problem)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** An embedded PostgreSQL of the test file's own on this data dir and port; after a SIGKILL the old backends may hold shared memory a moment longer. */
export async function startPostgresAt(dataDir: string, port: number): Promise<PostgresService> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await startEmbeddedPostgres({ dataDir, port, password: 'test' });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export interface LiveAgent {
  pid: number;
  sessionId: string;
  cwd: string;
}

/**
 * Live agents as the host sees them, whatever the records say: process-group leaders (every
 * agent's shim is one) whose environment names the session or the task.
 */
export function liveAgents(of: { sessionId?: string; taskId?: string }): LiveAgent[] {
  // An agent's group is led by its shim, whose environment is fixed: the session and task
  // are read from the members of its group (the agent itself, in its sandbox).
  const leaders: number[] = [];
  const identity = new Map<number, { sessionId: string; taskId: string | undefined }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      const pgid = Number(fields[2]);
      const env = readFileSync(`/proc/${name}/environ`, 'utf8').split('\0');
      if (pgid === Number(name) && env.some((v) => v.startsWith('TWS_EXECUTION_ID='))) leaders.push(pgid);
      const sessionId = env.find((v) => v.startsWith('TWS_SESSION_ID='))?.slice('TWS_SESSION_ID='.length);
      if (sessionId && !identity.has(pgid))
        identity.set(pgid, { sessionId, taskId: env.find((v) => v.startsWith('TWS_TASK_ID='))?.slice(12) });
    } catch {
      // gone meanwhile
    }
  }
  const found: LiveAgent[] = [];
  for (const pid of leaders) {
    const id = identity.get(pid);
    if (!id) continue;
    if (of.sessionId && id.sessionId !== of.sessionId) continue;
    if (of.taskId && id.taskId !== of.taskId) continue;
    try {
      found.push({ pid, sessionId: id.sessionId, cwd: readlinkSync(`/proc/${pid}/cwd`) });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * The live agents of `of` once there are `count` of them. A launch answers once its shim runs; the
 * agent's own identity shows when bubblewrap has set up the sandbox and started it, a moment later.
 */
export async function startedAgents(
  of: { sessionId?: string; taskId?: string },
  count: number,
  timeoutMs = 30_000,
): Promise<LiveAgent[]> {
  const deadline = Date.now() + timeoutMs;
  let found = liveAgents(of);
  while (found.length !== count) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${count} live agent(s) of ${JSON.stringify(of)}: saw ${found.length}`);
    await new Promise((r) => setTimeout(r, 50));
    found = liveAgents(of);
  }
  return found;
}

export function killLiveAgents(of: { sessionId?: string; taskId?: string }): void {
  for (const agent of liveAgents(of)) {
    try {
      process.kill(-agent.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** The dead process's workflow task timed out, and the next worker ran the workflow again. */
export async function expectReRunAfterTimeout(h: Harness, workflowId: string): Promise<void> {
  const history = await h.temporal.workflow.getHandle(workflowId).fetchHistory();
  expect(history.events!.some((e) => e.workflowTaskTimedOutEventAttributes)).toBe(true);
}

/** Pids of a launcher's processes on a data folder: that folder in their command line or environment (never this process). */
export async function processesOf(dir: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const [cmdline, environ] = await Promise.all(
      ['cmdline', 'environ'].map((file) => readFile(`/proc/${pid}/${file}`, 'utf8').catch(() => '')),
    );
    if (cmdline!.includes(dir) || environ!.split('\0').includes(`TWS_DATA_DIR=${dir}`)) found.push(pid);
  }
  return found;
}

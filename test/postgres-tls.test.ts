/**
 * PostgreSQL over TLS: the embedded PostgreSQL with TLS turned on, and the
 * service's own database code (migrations, the pool) connecting with
 * `DATABASE_URL=…?sslmode=verify-full&sslrootcert=<ca>`, the layout the README shows for a managed
 * PostgreSQL. A server certificate the CA did not sign, or one made out to another name, is refused.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../client/launcher/postgres-service';
import { serviceArgs } from '../client/launcher/service-build';
import { migrate } from '../db/migrate';
import { createPool } from '../db/pool';
import { freePort } from './support/harness';

const openssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: 'pipe' });

/** A CA and a server certificate it signs, made out to `names` (subjectAltName). */
function certificates(dir: string, prefix: string, names: string): { ca: string; cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const at = (f: string) => path.join(dir, `${prefix}-${f}`);
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${prefix} CA`,
      '-keyout',
      at('ca.key'),
      '-out',
      at('ca.pem'),
    ],
    dir,
  );
  openssl(
    ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=db', '-keyout', at('server.key'), '-out', at('server.csr')],
    dir,
  );
  writeFileSync(at('ext'), `subjectAltName=${names}\n`);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      at('server.csr'),
      '-CA',
      at('ca.pem'),
      '-CAkey',
      at('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      at('ext'),
      '-out',
      at('server.pem'),
    ],
    dir,
  );
  return { ca: at('ca.pem'), cert: at('server.pem'), key: at('server.key') };
}

let scratch: string;
let server: EmbeddedPostgresServer;
let port: number;
let password: string;
let good: ReturnType<typeof certificates>;
let stranger: ReturnType<typeof certificates>;
let wrongName: ReturnType<typeof certificates>;

const url = (ca: string, host = '127.0.0.1', db = 'tls_check') =>
  `postgres://postgres:${encodeURIComponent(password)}@${host}:${port}/${db}?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`;

/** The server presents `c` from now on (TLS settings take effect on reload). */
async function serve(c: ReturnType<typeof certificates>): Promise<void> {
  const admin = new pg.Client({ connectionString: server.serverUrl + '/postgres' });
  await admin.connect();
  try {
    const dataDir = (await admin.query<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory;
    const owner = statSync(dataDir);
    // PostgreSQL reads the key only when its own account owns it and no one else can read it.
    for (const [from, name] of [
      [c.cert, 'server.crt'],
      [c.key, 'server.key'],
    ] as const) {
      const to = path.join(dataDir, name);
      writeFileSync(to, readFileSync(from));
      chmodSync(to, 0o600);
      chownSync(to, owner.uid, owner.gid);
    }
    await admin.query(`ALTER SYSTEM SET ssl = on`);
    await admin.query(`SELECT pg_reload_conf()`);
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'tws-pg-tls-'));
  chmodSync(scratch, 0o755); // the postgres account (under root) enters it
  port = await freePort();
  password = 'tls-secret';
  good = certificates(path.join(scratch, 'certs'), 'good', 'IP:127.0.0.1');
  stranger = certificates(path.join(scratch, 'certs'), 'stranger', 'IP:127.0.0.1');
  wrongName = certificates(path.join(scratch, 'certs'), 'named', 'DNS:elsewhere.example');
  server = await startEmbeddedPostgres({ dataDir: path.join(scratch, 'pg'), port, password });
  const admin = new pg.Client({ connectionString: server.serverUrl + '/postgres' });
  await admin.connect();
  await admin.query('CREATE DATABASE tls_check');
  await admin.end();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await rm(scratch, { recursive: true, force: true });
});

describe('DATABASE_URL with sslmode=verify-full and a CA', () => {
  it('migrates and serves over TLS; a certificate the CA did not sign, or made out to another name, is refused', async () => {
    await serve(good);
    await migrate(url(good.ca));
    const pool = createPool(url(good.ca), 2);
    try {
      const row = (
        await pool.query<{ ssl: boolean; version: string }>(
          'SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
        )
      ).rows[0]!;
      expect(row.ssl).toBe(true);
      expect(row.version).toMatch(/^TLSv1\.[23]$/);
      // The migrations really ran through it.
      expect((await pool.query('SELECT count(*)::int AS n FROM tasks')).rows[0].n).toBe(0);
    } finally {
      await pool.end();
    }

    // The server's certificate is not from the CA the URL names: no connection, nothing migrated.
    const refusedBy = async (connectionString: string) => {
      const client = new pg.Client({ connectionString });
      const err = await client.connect().then(
        () => null,
        (e: Error) => e,
      );
      await client.end().catch(() => {});
      return err?.message ?? 'connected';
    };
    expect(await refusedBy(url(stranger.ca))).toMatch(/self[- ]signed|unable to verify|certificate/i);

    // Signed by a CA the URL trusts, but made out to another host: verify-full checks the name.
    await serve(wrongName);
    expect(await refusedBy(url(wrongName.ca))).toMatch(/altnames|does not match|hostname/i);
    await serve(good);
    expect(await refusedBy(url(good.ca))).toBe('connected');
  });
});

/** A part started as make start runs it, told of the database by `databaseUrl`: its exit code, time and stderr lines. */
async function refusedStart(entry: 'worker/main.ts' | 'client/launcher/prepare-main.ts', databaseUrl: string) {
  const own = `pg-refused-${Math.random().toString(16).slice(2, 10)}`;
  const started = Date.now();
  const child = spawn(process.execPath, serviceArgs(path.join(__dirname, '..'), entry), {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/root',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TWS_TASK_QUEUE: own,
      TWS_HOST_ID: own,
      TWS_DATA_DIR: path.join(scratch, own, 'data'),
      TWS_WORKSPACE_ROOT: path.join(scratch, own, 'workspaces'),
      TWS_LOG_DIR: path.join(scratch, own, 'logs'),
      TWS_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      TWS_MIN_FREE_DISK: '64MiB',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const bound = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(bound);
  return { code, ms: Date.now() - started, lines: stderr.split('\n').filter((l) => l.trim()) };
}

describe('a database that refuses the service: one line naming PostgreSQL and DATABASE_URL', () => {
  it('an untrusted certificate, a missing sslrootcert file and a wrong password stop the set-up and the worker at once, with no path, password or stack', async () => {
    await serve(good);
    const place = `127.0.0.1:${port}/tls_check (DATABASE_URL)`;
    const missingCa = path.join(scratch, 'no-such-dir', 'ca.pem');
    const wrongPassword = url(good.ca).replace(encodeURIComponent(password), 'not-the-password');
    const cases: [string, string, RegExp][] = [
      [
        'client/launcher/prepare-main.ts',
        url(stranger.ca),
        /^set-up failed: cannot reach PostgreSQL at .* this service does not trust its TLS certificate \(/,
      ],
      [
        'worker/main.ts',
        url(stranger.ca),
        /^worker: cannot reach PostgreSQL at .* this service does not trust its TLS certificate \(/,
      ],
      [
        'worker/main.ts',
        url(missingCa),
        /^worker: cannot reach PostgreSQL at .*: a file DATABASE_URL names \(sslrootcert, sslcert or sslkey\) cannot be read$/,
      ],
      [
        'client/launcher/prepare-main.ts',
        wrongPassword,
        /^set-up failed: cannot reach PostgreSQL at .*: it refused the user or password in DATABASE_URL$/,
      ],
    ];
    for (const [entry, databaseUrl, line] of cases) {
      const run = await refusedStart(entry as 'worker/main.ts', databaseUrl);
      const seen = `${entry}: ${run.lines.join('\n')}`;
      expect(run.code, seen).toBe(1);
      expect(run.lines, seen).toHaveLength(1);
      expect(run.lines[0], seen).toMatch(line);
      expect(run.lines[0]).toContain(place);
      for (const secret of [password, 'not-the-password', missingCa, stranger.ca, scratch])
        expect(run.lines[0]).not.toContain(secret);
      expect(run.ms, seen).toBeLessThan(25_000);
    }
  });
});

/** The database `tls_check` takes TLS connections only (a `hostnossl … reject` line first), or again any. */
async function tlsOnly(on: boolean): Promise<void> {
  const admin = new pg.Client({ connectionString: server.serverUrl + '/postgres' });
  await admin.connect();
  try {
    const hba = (await admin.query<{ hba_file: string }>('SHOW hba_file')).rows[0]!.hba_file;
    const rule = 'hostnossl tls_check all all reject\n';
    const rest = readFileSync(hba, 'utf8').replace(rule, '');
    writeFileSync(hba, on ? rule + rest : rest);
    await admin.query('SELECT pg_reload_conf()');
  } finally {
    await admin.end();
  }
}

describe('a TLS refusal says which one it is', () => {
  it('a certificate made out to another name says the name does not match and which was expected; a TLS-only server says TLS is required', async () => {
    const place = `127.0.0.1:${port}/tls_check (DATABASE_URL)`;
    await serve(wrongName);
    try {
      const run = await refusedStart('worker/main.ts', url(wrongName.ca));
      const seen = run.lines.join('\n');
      expect(run.code, seen).toBe(1);
      expect(run.lines, seen).toHaveLength(1);
      expect(run.lines[0]).toBe(
        `worker: cannot reach PostgreSQL at ${place}: its TLS certificate does not match the name DATABASE_URL connects to (expected 127.0.0.1; it names DNS:elsewhere.example): connect by a name the certificate names, or give the server a certificate for 127.0.0.1`,
      );
    } finally {
      await serve(good);
    }
    await tlsOnly(true);
    try {
      const plain = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/tls_check`;
      for (const entry of ['client/launcher/prepare-main.ts', 'worker/main.ts'] as const) {
        const run = await refusedStart(entry, plain);
        const seen = `${entry}: ${run.lines.join('\n')}`;
        expect(run.code, seen).toBe(1);
        expect(run.lines, seen).toHaveLength(1);
        expect(run.lines[0], seen).toMatch(
          /^(set-up failed|worker): cannot reach PostgreSQL at .*: it requires TLS, and DATABASE_URL does not ask for it: add sslmode=verify-full and sslrootcert \(the server's CA\)$/,
        );
        expect(run.lines[0]).toContain(place);
        expect(run.lines[0]).not.toContain(password);
      }
      // Asked for with TLS, the same server takes it.
      const client = new pg.Client({ connectionString: url(good.ca) });
      await client.connect();
      await client.end();
    } finally {
      await tlsOnly(false);
    }
  });
});

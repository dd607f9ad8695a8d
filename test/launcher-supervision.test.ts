/**
 * `make start` as an operator runs it: the real launcher with embedded PostgreSQL and the Temporal
 * dev server on ports of its own. Each part is killed with SIGKILL and must come back on its own
 * while the rest keeps running; Ctrl-C then leaves no process of this instance behind, even with a
 * restart pending. A start-up failure still ends the launcher with one line.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { processesOf } from './support/processes';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/harness';

const root = path.resolve(__dirname, '..');
type PartName = 'postgres' | 'temporal' | 'worker' | 'gateway';
type Pids = Record<PartName | 'launcher', number>;

let dataDir = '';
let apiUrl = '';
let launcher: ChildProcess | null = null;
let output = '';
/** Every pid this instance ran, for the final check and the cleanup. */
const seenPids = new Set<number>();
/** Data dirs of the launchers this file started, to kill what is left of them and remove them. */
const dataDirs: string[] = [];

/** Runs `make start`'s launcher on a fresh data dir; its output goes to `onOutput`. */
async function startLauncher(
  ports: { api: number; pg: number; temporal: number; ui: number },
  onOutput: (text: string) => void,
): Promise<{ child: ChildProcess; dir: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tws-launcher-'));
  dataDirs.push(dir);
  await chmod(dir, 0o755); // embedded PostgreSQL runs as the postgres user when root starts it
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !key.startsWith('TWS_') && key !== 'DATABASE_URL' && key !== 'TEMPORAL_ADDRESS',
    ),
  );
  Object.assign(env, {
    TWS_DATA_DIR: dir,
    // The host's registry of instances is this start's own: other files' launchers run meanwhile.
    TWS_INSTANCE_REGISTRY: path.join(dir, 'instances'),
    TWS_API_PORT: String(ports.api),
    TWS_PG_PORT: String(ports.pg),
    TWS_TEMPORAL_PORT: String(ports.temporal),
    TWS_TEMPORAL_UI_PORT: String(ports.ui),
  });
  const child = spawn(process.execPath, ['--import', 'tsx', 'client/launcher/launcher.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => onOutput(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => onOutput(chunk.toString()));
  return { child, dir };
}

const freePorts = async () => {
  const [api, pg, temporal, ui] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  return { api: api!, pg: pg!, temporal: temporal!, ui: ui! };
};

/** State letter and parent of a process from /proc/<pid>/stat, or null when it is gone. */
async function procStat(pid: number): Promise<{ state: string; ppid: number } | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (!stat) return null;
  const [state, ppid] = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return { state: state!, ppid: Number(ppid) };
}

/** Running: signalable and not a zombie (an exited process whose parent has not reaped it yet). */
async function alive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return (await procStat(pid))?.state !== 'Z';
}

async function childrenOf(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (/^\d+$/.test(entry) && (await procStat(Number(entry)))?.ppid === pid) children.push(Number(entry));
  }
  return children;
}

/** State and command line of a process, for a failure message. */
async function describeProcess(pid: number): Promise<string> {
  const [stat, cmdline] = await Promise.all(
    ['stat', 'cmdline'].map((file) => readFile(`/proc/${pid}/${file}`, 'utf8').catch(() => '')),
  );
  return `${pid} ${stat!.split(') ')[1]?.slice(0, 12) ?? ''} ${cmdline!.replaceAll('\0', ' ')}`;
}

/** The launcher's own lines and errors, without the dev server's and the services' structured logs. */
const launcherLog = (): string =>
  output
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('time=') && !line.startsWith('{"level"'))
    .slice(-40)
    .join('\n');

async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | null | undefined | false>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value) return value;
    if (launcher?.exitCode !== null)
      throw new Error(`the launcher exited (${launcher?.exitCode}) while waiting for ${what}\n${launcherLog()}`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms\n${launcherLog()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function readPids(): Promise<Pids> {
  const pids = JSON.parse(await readFile(path.join(dataDir, 'pids.json'), 'utf8')) as Pids;
  for (const pid of Object.values(pids)) seenPids.add(pid);
  return pids;
}

const ready = async (): Promise<boolean> =>
  (await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(5000) })).status === 200;

/**
 * SIGKILLs one part and waits until the launcher runs a new one and the API is ready again. The
 * killed process' children (PostgreSQL's backends) must go too: they leave when their parent dies.
 */
async function killAndAwaitRestart(part: PartName): Promise<{ before: number; after: number }> {
  const before = (await readPids())[part];
  expect(await alive(before)).toBe(true);
  const orphans = await childrenOf(before);
  process.kill(before, 'SIGKILL');
  const after = await waitFor(`a new ${part}`, 60_000, async () => {
    const pid = (await readPids())[part];
    return pid !== before && (await alive(pid)) && pid;
  });
  await waitFor(`/readyz after ${part} came back`, 60_000, ready);
  expect(await alive(before)).toBe(false);
  await waitFor(`the children of the killed ${part} to exit`, 30_000, async () =>
    (await Promise.all(orphans.map(alive))).every((a) => !a),
  );
  expect(output).toMatch(new RegExp(`${part} \\(pid ${before}\\) died \\(signal SIGKILL\\); restarting in [0-9.]+ s`));
  return { before, after };
}

let enginePorts = { temporal: 0, ui: 0 };

beforeAll(async () => {
  const ports = await freePorts();
  enginePorts = { temporal: ports.temporal, ui: ports.ui };
  apiUrl = `http://127.0.0.1:${ports.api}`;
  ({ child: launcher, dir: dataDir } = await startLauncher(ports, (text) => (output += text)));
  seenPids.add(launcher.pid!);
  await waitFor(
    'the launcher to report running',
    150_000,
    async () => output.includes('task-workspaces is running') && (await ready()),
  );
}, 180_000);

afterAll(async () => {
  if (launcher && launcher.exitCode === null && launcher.signalCode === null) launcher.kill('SIGKILL');
  const leftovers = (await Promise.all(dataDirs.map(processesOf))).flat();
  for (const pid of new Set([...seenPids, ...leftovers])) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
}, 60_000);

describe('the launcher supervises its parts', () => {
  it('runs every part and says which pids they have', async () => {
    const pids = await readPids();
    expect(pids.launcher).toBe(launcher!.pid);
    for (const part of ['postgres', 'temporal', 'worker', 'gateway'] as const)
      expect(await alive(pids[part])).toBe(true);
  });

  it("closes the bundled engine to whoever lacks the service's credentials: gRPC takes only the client certificate, the UI only the operator token, the dev server in a network namespace of its own", async () => {
    const tlsDir = path.join(dataDir, 'engine-tls');
    const [ca, crt, key] = await Promise.all(
      ['ca.pem', 'client.pem', 'client.key'].map((f) => readFile(path.join(tlsDir, f))),
    );
    const address = `127.0.0.1:${enginePorts.temporal}`;
    const attempt = async (options: Record<string, unknown>) => {
      try {
        const connection = await Connection.connect({ address, connectTimeout: 3000, ...options });
        try {
          await connection.workflowService.getSystemInfo({});
          return 'answered';
        } finally {
          await connection.close();
        }
      } catch {
        return 'refused';
      }
    };
    expect(await attempt({})).toBe('refused');
    expect(await attempt({ tls: { serverRootCACertificate: ca, serverNameOverride: 'tws-engine' } })).toBe('refused');
    // A certificate of another CA (made here, as any local process could) is refused too.
    const otherDir = await mkdtemp(path.join(os.tmpdir(), 'tws-other-ca-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          path.join(otherDir, 'k'),
          '-out',
          path.join(otherDir, 'c'),
          '-days',
          '1',
          '-subj',
          '/CN=intruder',
        ],
        { stdio: 'ignore' },
      );
      const other = { crt: await readFile(path.join(otherDir, 'c')), key: await readFile(path.join(otherDir, 'k')) };
      expect(
        await attempt({
          tls: { serverRootCACertificate: ca, serverNameOverride: 'tws-engine', clientCertPair: other },
        }),
      ).toBe('refused');
    } finally {
      await rm(otherDir, { recursive: true, force: true });
    }
    expect(
      await attempt({
        tls: { serverRootCACertificate: ca, serverNameOverride: 'tws-engine', clientCertPair: { crt, key } },
      }),
    ).toBe('answered');
    // The keys are the service's alone.
    for (const f of ['ca.key', 'client.key', 'server.key'])
      expect((await stat(path.join(tlsDir, f))).mode & 0o077).toBe(0);
    expect((await stat(tlsDir)).mode & 0o077).toBe(0);

    // The Web UI (it can terminate and signal workflows too): the operator token, nothing less.
    const ui = `http://127.0.0.1:${enginePorts.ui}/api/v1/namespaces`;
    const secrets = JSON.parse(await readFile(path.join(dataDir, 'secrets.json'), 'utf8')) as {
      userToken: string;
      operatorToken: string;
    };
    const basic = (password: string) => ({
      authorization: `Basic ${Buffer.from(`op:${password}`).toString('base64')}`,
    });
    expect((await fetch(ui)).status).toBe(401);
    expect((await fetch(ui, { headers: basic(secrets.userToken) })).status).toBe(401);
    const answered = await fetch(ui, { headers: basic(secrets.operatorToken) });
    expect(answered.status).toBe(200);
    expect(JSON.stringify(await answered.json())).toContain('"default"');

    // The dev server itself (its gRPC, UI, HTTP API and metrics ports) is in another network namespace.
    const ownNet = readlinkSync('/proc/self/ns/net');
    const cmdline = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        return '';
      }
    };
    const servers = (await processesOf(dataDir)).filter(
      (pid) => cmdline(pid).includes('start-dev') && !cmdline(pid).startsWith('bwrap'),
    );
    expect(servers.length).toBeGreaterThan(0);
    for (const pid of servers) expect(readlinkSync(`/proc/${pid}/ns/net`)).not.toBe(ownNet);
  }, 60_000);

  it('starts a killed worker again and leaves the rest running', async () => {
    const others = await readPids();
    const { after } = await killAndAwaitRestart('worker');
    expect(await alive(after)).toBe(true);
    const now = await readPids();
    expect([now.postgres, now.temporal, now.gateway]).toEqual([others.postgres, others.temporal, others.gateway]);
  }, 90_000);

  it('starts a killed gateway again, and the new one answers /readyz', async () => {
    const { after } = await killAndAwaitRestart('gateway');
    expect((await readPids()).gateway).toBe(after);
    expect(await ready()).toBe(true);
  }, 90_000);

  it('starts a killed Temporal dev server again on its data, and the API is ready again', async () => {
    await killAndAwaitRestart('temporal');
  }, 90_000);

  it('starts a killed PostgreSQL again on its data dir and port, and the API is ready again', async () => {
    const { after } = await killAndAwaitRestart('postgres');
    const secrets = JSON.parse(await readFile(path.join(dataDir, 'secrets.json'), 'utf8')) as { userToken: string };
    // A request that reads the database through the gateway's pool: an unknown task is a typed 404, not a 5xx.
    const task = await fetch(`${apiUrl}/v1/tasks/${randomUUID()}`, {
      headers: { authorization: `Bearer ${secrets.userToken}` },
    });
    expect(task.status).toBe(404);
    expect(await alive(after)).toBe(true);
  }, 90_000);

  it('Ctrl-C stops everything it ran, cancels a pending restart and leaves no process behind', async () => {
    const pids = await readPids();
    const instance = await processesOf(dataDir);
    expect(instance).toEqual(expect.arrayContaining([pids.postgres, pids.temporal, pids.worker, pids.gateway]));
    // A restart is pending (the worker died and waits out its backoff, 1 s by now) when Ctrl-C comes.
    const seen = output.length;
    process.kill(pids.worker, 'SIGKILL');
    await waitFor("the worker's death to be logged", 10_000, async () =>
      output.slice(seen).includes(`worker (pid ${pids.worker}) died`),
    );
    const exited = new Promise<number | null>((resolve) => launcher!.once('exit', (code) => resolve(code)));
    launcher!.kill('SIGINT');
    expect(
      await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running after 60 s'), 60_000))]),
    ).toBe(0);
    expect(output.slice(seen)).not.toContain('worker restarted');
    const all = [...new Set([...seenPids, ...instance])];
    const stillRunning = await Promise.all(all.map(alive));
    const left = all.filter((_, i) => stillRunning[i]);
    expect(await Promise.all(left.map(describeProcess)), launcherLog()).toEqual([]);
    expect(await processesOf(dataDir)).toEqual([]);
  }, 90_000);
});

describe('a start-up failure still ends the launcher', () => {
  it("PostgreSQL's port taken: one line that says so, exit code 1, nothing left running", async () => {
    const holder = createServer();
    const ports = await freePorts();
    await new Promise<void>((resolve) => holder.listen(ports.pg, '127.0.0.1', resolve));
    try {
      let failedOutput = '';
      const { child, dir } = await startLauncher(ports, (text) => (failedOutput += text));
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      expect(code).toBe(1);
      const failures = failedOutput.split('\n').filter((line) => line.startsWith('start-up failed:'));
      expect(failures).toEqual([
        expect.stringMatching(
          new RegExp(`^start-up failed: port ${ports.pg} \\(embedded PostgreSQL\\) is already in use.*TWS_PG_PORT`),
        ),
      ]);
      expect(await processesOf(dir)).toEqual([]);
    } finally {
      holder.close();
    }
  }, 60_000);
});

/**
 * `make start` from any folder: a clean clone of this checkout (its last commit) in a
 * folder of mode 0700 whose path has spaces, as a new user's `~/task-workspaces` is under root's
 * /root. Started as the current user (root in CI, so embedded PostgreSQL runs as the postgres
 * account), stopped with Ctrl-C, and read back from /proc. The clone borrows the checkout's
 * installed packages as hard links (`make setup` accepts them by the lock file's hash), so only
 * the start itself is timed; the start path is the README's `make start`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_POSTGRES_HOME } from '../client/launcher/postgres-account';
import { taskDirName } from '../domain/task-layout';
import { makeRepo } from './support/world';

const source = process.cwd();
const asRoot = process.getuid?.() === 0;
let base: string;
let clone: string;
let repository: string;
const ports = { TWS_PG_PORT: 0, TWS_TEMPORAL_PORT: 0, TWS_TEMPORAL_UI_PORT: 0, TWS_API_PORT: 0 };
const runs: Run[] = [];

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const instanceRegistry = mkdtempSync(path.join(os.tmpdir(), 'tws-instances-'));

/** The environment of a person's shell: none of the variables that point the service elsewhere, nor those of an enclosing make (`make test` runs this file). */
function personEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^(TWS_|DATABASE_URL$|TEMPORAL_|VITEST|NODE_OPTIONS$|MAKELEVEL$|MAKEFLAGS$|MFLAGS$)/.test(key))
      env[key] = value;
  for (const [key, port] of Object.entries(ports)) env[key] = String(port);
  // The host's registry of instances is this file's own: other files' launchers run meanwhile.
  env.TWS_INSTANCE_REGISTRY = instanceRegistry;
  return env;
}

interface Run {
  child: ChildProcess;
  output: () => { stdout: string; stderr: string };
  exited: Promise<number | null>;
}

/** `make start` in the clone, in a process group of its own as a terminal's foreground job is. */
/** The local addresses a TCP port is listened on, from the kernel's own tables (IPv4 and IPv6). */
function listeningOn(port: number): string[] {
  const addresses: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A' || !local) continue; // 0A: LISTEN
      const [hex, portHex] = local.split(':');
      if (parseInt(portHex!, 16) !== port) continue;
      addresses.push(
        hex!.length === 8
          ? (hex!.match(/../g) ?? [])
              .reverse()
              .map((b) => parseInt(b, 16))
              .join('.')
          : `[${hex}]`, // IPv6: any listener there is a failure of the promise, its exact form aside
      );
    }
  }
  return addresses;
}

function makeStart(): Run {
  const child = spawn('make', ['start'], {
    cwd: clone,
    env: personEnv(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const run = { child, output: () => ({ stdout, stderr }), exited };
  runs.push(run);
  return run;
}

async function untilReady(run: Run, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void run.exited.then((code) => (exitCode = code));
  for (;;) {
    const answer = await fetch(`http://127.0.0.1:${ports.TWS_API_PORT}/readyz`, {
      signal: AbortSignal.timeout(2000),
    }).catch(() => null);
    if (answer?.status === 200) return;
    if (exitCode !== undefined || Date.now() > deadline) {
      throw new Error(
        `make start ${exitCode !== undefined ? `exited ${exitCode}` : 'was not ready'}:\n${run.output().stdout}\n${run.output().stderr}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Ctrl-C: SIGINT to the whole foreground process group. */
async function pressCtrlC(run: Run): Promise<void> {
  process.kill(-run.child.pid!, 'SIGINT');
  await run.exited;
}

/** Where the clone's database went, when it was placed outside (root). */
function placedDataDirs(): string[] {
  try {
    return [readlinkSync(path.join(clone, '.data', 'postgres'))];
  } catch {
    return [];
  }
}

/** Processes that belong to the clone: it or its data dir in their command line, working folder, binary or environment. */
function processesOf(marks: string[]): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const read = (file: string) => readFileSync(`/proc/${pid}/${file}`, 'utf8').replace(/\0/g, ' ');
      const link = (file: string) => readlinkSync(`/proc/${pid}/${file}`);
      const seen = [read('cmdline'), link('cwd'), link('exe'), read('environ')].join('\n');
      if (marks.some((mark) => seen.includes(mark))) found.push(`${pid} ${read('cmdline').trim()}`);
    } catch {
      // gone meanwhile, or a kernel thread
    }
  }
  return found;
}

/** Nothing of `marks` runs any more, apart from the processes of `kept` (an agent left running on purpose). */
async function nothingLeftRunning(marks: string[], kept: string[] = []): Promise<void> {
  const left = () => {
    const keptNow = new Set(kept.length > 0 ? processesOf(kept) : []);
    return processesOf(marks).filter((p) => !keptNow.has(p));
  };
  const deadline = Date.now() + 5000; // the kernel reaps what has just exited
  while (left().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  expect(left()).toEqual([]);
}

const uidOf = (pid: number): number => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

beforeAll(async () => {
  // The checkout's own set-up stamps its node_modules with the lock file's hash (quick when done).
  execFileSync('bash', ['scripts/setup.sh'], { cwd: source, stdio: 'ignore' });
  base = await mkdtemp(path.join(os.tmpdir(), 'tws-anywhere-'));
  // The person's repository is where other users can reach it (agents run as their own uid);
  // the clone of the product is not.
  await chmod(base, 0o711);
  repository = makeRepo(base, 'the repository');
  const home = path.join(base, 'closed home');
  await mkdir(home, { mode: 0o700 });
  await chmod(home, 0o700);
  clone = path.join(home, 'task workspaces');
  execFileSync('git', ['clone', '--quiet', source, clone]);
  for (const installed of ['node_modules', '.tools']) {
    try {
      execFileSync('cp', ['-al', path.join(source, installed), path.join(clone, installed)], { stdio: 'ignore' });
    } catch {
      execFileSync('cp', ['-a', path.join(source, installed), path.join(clone, installed)]); // another file system
    }
  }
  for (const key of Object.keys(ports) as (keyof typeof ports)[]) ports[key] = await freePort();
}, 180_000);

// A failed test stops what it started as a person would, so the next one finds its ports free.
afterEach(async () => {
  for (const run of runs.splice(0)) {
    if (run.child.exitCode !== null || run.child.signalCode !== null) continue;
    await pressCtrlC(run).catch(() => {});
  }
});

afterAll(async () => {
  if (!clone) return;
  for (const leftover of processesOf([clone, ...placedDataDirs()]))
    process.kill(Number(leftover.split(' ')[0]), 'SIGKILL');
  for (const placed of placedDataDirs())
    if (placed.startsWith(`${ROOT_POSTGRES_HOME}/data/`))
      await rm(path.dirname(placed), { recursive: true, force: true });
  await rm(base, { recursive: true, force: true });
});

describe('make start from any folder', () => {
  it('starts from a clone in a 0700 folder whose path has spaces, keeps its data across starts, and Ctrl-C leaves nothing running', async () => {
    const first = makeStart();
    await untilReady(first, 240_000);

    // The world as it is while up: the postmaster runs as an account that is not root, on a
    // data dir that nobody else can read or write.
    const pids = JSON.parse(await readFile(path.join(clone, '.data', 'pids.json'), 'utf8')) as Record<string, number>;
    const dataDir = await realpath(path.join(clone, '.data', 'postgres'));
    expect(readlinkSync(`/proc/${pids.postgres}/cwd`)).toBe(dataDir);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    if (asRoot) {
      expect(uidOf(pids.postgres!)).not.toBe(0);
      expect(statSync(dataDir).uid).toBe(uidOf(pids.postgres!));
      // The postgres account cannot enter the clone, so neither its binary nor its data is there.
      expect(readlinkSync(`/proc/${pids.postgres}/exe`).startsWith(ROOT_POSTGRES_HOME)).toBe(true);
      expect(dataDir.startsWith(`${ROOT_POSTGRES_HOME}/data/`)).toBe(true);
    }

    // Something of the user's own, to find again after a restart.
    const { userToken } = JSON.parse(await readFile(path.join(clone, '.data', 'secrets.json'), 'utf8')) as {
      userToken: string;
    };
    const api = (route: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${ports.TWS_API_PORT}${route}`, {
        method: body ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
    const registered = await api('/v1/repositories', { name: 'the-repository', path: repository });
    expect(registered.status).toBe(201);
    // An agent at work, which Ctrl-C leaves running (it says so) and `tws stop --all` stops.
    const task = await api('/v1/tasks', {
      title: 'outlives a Ctrl-C',
      repositories: [{ repositoryId: ((await registered.json()) as { id: string }).id }],
    });
    expect(task.status).toBe(201);
    const taskId = ((await task.json()) as { id: string }).id;
    const launched = await api(`/v1/tasks/${taskId}/sessions`, {
      executorType: 'worktree',
      agentProfile: 'shell',
      command: ['sh', '-c', 'sleep 600'],
    });
    expect(launched.status).toBe(201);
    const { sessionId, executionId } = (await launched.json()) as { sessionId: string; executionId: string };
    // The agent's processes: its worktree (under the task's folder) or its execution's mark.
    const agentMarks = [taskDirName(taskId), executionId];
    expect(processesOf(agentMarks)).not.toEqual([]);
    // Its workspace is not below the closed folder, which its uid could not enter, but in the agent
    // root make start chose for this data folder.
    const workspace = (await (await api(`/v1/sessions/${sessionId}/workspace`)).json()) as { workspacePath?: string };
    if (asRoot)
      expect(workspace.workspacePath ?? '').toMatch(/^\/var\/lib\/task-workspaces\/agents\/[0-9a-f]{16}\/workspaces\//);

    // The clone's `tws`, from another folder and told no port: the record make start keeps of its API.
    const apiRecord = path.join(clone, '.data', 'api.json');
    expect(JSON.parse(await readFile(apiRecord, 'utf8'))).toEqual({
      url: `http://127.0.0.1:${ports.TWS_API_PORT}`,
      pid: pids.launcher,
    });
    expect(statSync(apiRecord).mode & 0o777).toBe(0o600);
    const noPort = personEnv();
    delete noPort.TWS_API_PORT;
    const jobs = execFileSync(process.execPath, [path.join(clone, 'bin', 'tws.mjs'), 'jobs', '--json'], {
      cwd: os.tmpdir(),
      env: noPort,
      encoding: 'utf8',
    });
    expect(JSON.parse(jobs)).toEqual([]);

    // A second make start on the data folder in use refuses at once, in one line, and touches
    // nothing of the running one: its pids.json, its workflow bundle, its API record, its API.
    const bundle = path.join(clone, '.data', 'workflow-bundle.js');
    const untouched = async () => ({
      pids: await readFile(path.join(clone, '.data', 'pids.json'), 'utf8'),
      bundleMtime: statSync(bundle).mtimeMs,
      api: await readFile(apiRecord, 'utf8'),
    });
    const before = await untouched();
    const intruder = makeStart();
    expect(await intruder.exited).not.toBe(0);
    const said = `${intruder.output().stdout}\n${intruder.output().stderr}`
      .split('\n')
      .filter((line) => line.trim() && !line.startsWith('make: ***') && !line.startsWith('setup: '));
    expect(said).toEqual([
      expect.stringMatching(
        new RegExp(`^start-up failed: another make start \\(pid ${pids.launcher}\\) uses this data folder`),
      ),
    ]);
    expect(await untouched()).toEqual(before);
    expect((await api('/readyz')).status).toBe(200);
    // What a default start promises: the API on loopback alone, and the secrets file its owner's alone.
    expect(listeningOn(ports.TWS_API_PORT)).toEqual(['127.0.0.1']);
    expect(statSync(path.join(clone, '.data', 'secrets.json')).mode & 0o777).toBe(0o600);

    const marks = [clone, dataDir];
    await pressCtrlC(first);
    // Ctrl-C stops the services and says what it leaves: the one agent, still running.
    expect(first.output().stdout).toMatch(
      new RegExp(`^1 agent keeps running on this host \\(session ${sessionId}\\): .*npx tws stop --all`, 'm'),
    );
    await nothingLeftRunning(marks, agentMarks);
    expect(processesOf(agentMarks)).not.toEqual([]);
    // The record stays, marked stopped: tws names this instance's own port, and says it is not running.
    expect(JSON.parse(await readFile(apiRecord, 'utf8'))).toEqual({
      url: `http://127.0.0.1:${ports.TWS_API_PORT}`,
      pid: pids.launcher,
      stopped: true,
    });

    const second = makeStart();
    await untilReady(second, 120_000);
    // The row written before the restart is there: the same repository is refused as registered.
    const again = await api('/v1/repositories', { name: 'the-repository', path: repository });
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('already registered');
    expect(await realpath(path.join(clone, '.data', 'postgres'))).toBe(dataDir);
    // As the message said: the clone's tws, from another folder, stops the agent the restart found.
    const stopAll = execFileSync(process.execPath, [path.join(clone, 'bin', 'tws.mjs'), 'stop', '--all'], {
      cwd: os.tmpdir(),
      env: noPort,
      encoding: 'utf8',
    });
    expect(stopAll.split('\n')[0]).toBe('stopped 1 of 1 session');
    await nothingLeftRunning(agentMarks);
    await pressCtrlC(second);
    expect(second.output().stdout).not.toMatch(/keeps? running on this host/);
    await nothingLeftRunning(marks);
    expect(existsSync(path.join(clone, '.data', 'pids.json'))).toBe(false);
    expect(JSON.parse(await readFile(apiRecord, 'utf8'))).toMatchObject({
      url: `http://127.0.0.1:${ports.TWS_API_PORT}`,
      stopped: true,
    });
    expect(existsSync(path.join(clone, '.data', 'launcher.pid'))).toBe(false);
  }, 420_000);

  const variables = Object.keys(ports) as (keyof typeof ports)[];
  it.each(variables)(
    'a port already taken ends the start with one line naming it and %s, and starts nothing',
    async (variable) => {
      const squatter = net.createServer();
      await new Promise<void>((resolve, reject) => {
        squatter.once('error', reject);
        squatter.listen(ports[variable], '127.0.0.1', resolve);
      });
      try {
        const run = makeStart();
        const code = await run.exited;
        const { stdout, stderr } = run.output();
        // The launcher exits 1, and make says so in its own line and exits 2 (as the README says).
        expect(code).toBe(2);
        expect(stderr).toMatch(/^make: \*\*\* \[Makefile:\d+: start\] Error 1$/m);
        // make adds its own `make: *** … Error 1`; everything else said is the one line.
        const said = `${stdout}\n${stderr}`
          .split('\n')
          .filter((line) => line.trim() && !line.startsWith('make: ***') && !line.startsWith('setup: '));
        expect(said).toEqual([
          expect.stringMatching(new RegExp(`^start-up failed: port ${ports[variable]} .*${variable}`)),
        ]);
        expect(stderr).not.toMatch(/^\s+at /m);
        await nothingLeftRunning([clone]);
      } finally {
        await new Promise((resolve) => squatter.close(resolve));
      }
    },
    60_000,
  );
});

/**
 * The system for one test file: its own database (migrated), its own task queue and host id,
 * an in-process worker on the shared Temporal dev server, and a gateway listening on a real port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readdirSync, rmdirSync } from 'node:fs';
import { chmod, mkdtemp, realpath, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import pino from 'pino';
import { afterAll, inject } from 'vitest';
import { buildGateway } from '../../client/gateway/app';
import { createPool } from '../../db/pool';
import { serviceArgs } from '../../client/launcher/service-build';
import { loadConfig, type Config } from '../../domain/config';
import { startWorker, type WorkerHandle } from '../../worker/worker';
import { agentIsolation, agentNetwork } from '../../executors/host/agent-sandbox';
import { prepareWorkspaceRoot } from '../../worker/workspace-root';
import { migratedDatabase } from './databases';
import { listensOn, portTaken } from './listeners';

// One runtime per test process, logging only what matters.
try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // already installed in this process
}

export const USER_TOKEN = 'test-user-token';
export const OPERATOR_TOKEN = 'test-operator-token';

export interface Harness {
  config: Config;
  pool: pg.Pool;
  databaseUrl: string;
  temporal: Client;
  scratch: string;
  baseUrl: string;
  api<T = any>(
    method: string,
    url: string,
    body?: unknown,
    token?: string | null,
  ): Promise<{ status: number; body: T }>;
  startWorker(overrides?: Partial<Config>): Promise<WorkerHandle>;
  /** The worker as its own process (for SIGKILL tests), with this harness's configuration. */
  /** With `logFile`, the worker's log (its stdout and stderr, as the launcher's services log has both) goes there. */
  spawnWorker(extraEnv?: Record<string, string>, logFile?: string): ChildProcess;
  /** The compiled gateway as its own process (it runs the launches it starts unless told not to), ready. */
  /** With `stderrFile`, what the gateway writes to stderr goes there (else to the test's own); `stdoutFile`, its stdout. */
  /** On a free port, or on `extraEnv.TWS_API_PORT` when given. */
  spawnGateway(
    extraEnv?: Record<string, string>,
    stderrFile?: string,
    stdoutFile?: string,
  ): Promise<{ child: ChildProcess; api: Harness['api']; url: string }>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

/**
 * For a file whose tests each make their own harness: `harness()` makes one that is closed after
 * the file's tests, `scratch()` a folder removed then, and `cleanups` takes anything else to end
 * then (last registered, first run).
 */
export function harnessesPerTest() {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });
  return {
    cleanups,
    async harness(...args: Parameters<typeof createHarness>): Promise<Harness> {
      const h = await createHarness(...args);
      cleanups.push(() => h.close());
      return h;
    },
    scratch: () => scratchFolder(cleanups),
  };
}

/**
 * A folder of the test's own, as a harness's scratch folder is made (a git wrapper's, a dev
 * server's data), removed by `cleanups`: a harness made only for its folder cost a second and a
 * worker polling until the file ended.
 */
export async function scratchFolder(cleanups: (() => Promise<void> | void)[]): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'tws-test-')));
  await chmod(dir, 0o711);
  cleanups.push(() => rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }));
  return dir;
}

/** `postgresServerUrl`: a PostgreSQL of the test file's own (one it may stop), instead of the run's shared one. */
export async function createHarness(
  overrides: Partial<Config> = {},
  opts: {
    temporalAddress?: string;
    inProcessWorker?: boolean;
    postgresServerUrl?: string;
    /** Where the in-process gateway's and worker's log lines go (info and above), for a test that reads them. */
    logTo?: pino.DestinationStream;
  } = {},
): Promise<Harness> {
  const scratch = await realpath(await mkdtemp(path.join(os.tmpdir(), 'tws-test-')));
  // Traversable, not listable: agents run as their workspace's own uid and bind folders below it.
  await chmod(scratch, 0o711);
  const databaseUrl = opts.postgresServerUrl
    ? await migratedDatabase(opts.postgresServerUrl)
    : await migratedDatabase(inject('postgresServerUrl'), inject('templateDatabase'));
  const pool = createPool(databaseUrl, 30);
  const temporalAddress = opts.temporalAddress ?? inject('temporalAddress');
  const base = loadConfig(
    {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TWS_TASK_QUEUE: `tws-test-${randomUUID()}`,
      TWS_HOST_ID: `host-${randomUUID().slice(0, 8)}`,
      TWS_DATA_DIR: path.join(scratch, 'data'),
      TWS_USER_TOKEN: USER_TOKEN,
      TWS_OPERATOR_TOKEN: OPERATOR_TOKEN,
      TWS_AGENT_STOP_GRACE_MS: '2000',
      // The tests launch `local` agents with the user token; the default (operators only) has its own test.
      TWS_LOCAL_EXECUTOR: 'all',
      TWS_CLEANUP_RETRY_WAITS_MS: '200,400',
      TWS_CLEANUP_MAX_ATTEMPTS: '3',
      // A step on a worker a test kills runs again after 8 s without a heartbeat, not 30: the same
      // recovery, sooner (beats every 2 s, so a busy machine still keeps a live step alive).
      TWS_STEP_HEARTBEAT_TIMEOUT_MS: '8000',
      // A launch or cleanup whose gateway or worker a test kills is run again after 5 s, not 10.
      TWS_WORKFLOW_TASK_TIMEOUT_MS: '5000',
      // Not the machine's free disk: the disk tests set their own minimum on a small filesystem.
      TWS_MIN_FREE_DISK: '64MiB',
    },
    { cwd: scratch, hostname: 'test' },
  );
  // A test's own retry schedule keeps the harness's step heartbeat timeout unless it sets one.
  const config = await prepareWorkspaceRoot({
    ...base,
    ...overrides,
    cleanupPolicy: { ...base.cleanupPolicy, ...overrides.cleanupPolicy },
  });
  const logger = opts.logTo
    ? pino({ level: 'info' }, opts.logTo)
    : pino({ level: process.env.TWS_TEST_LOG ?? 'silent' });
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  // As in the gateway process: the client shares its connection with the in-process worker, so
  // launches start there eagerly; with no worker in this process they go to the queue as usual.
  const temporal = new Client({ connection: nativeConnection, namespace: config.temporalNamespace });

  let worker: WorkerHandle | null = null;
  const runWorker = async (extra: Partial<Config> = {}) => {
    worker = await startWorker({
      config: { ...config, ...extra },
      pool,
      logger,
      connection: nativeConnection,
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    return worker;
  };
  if (opts.inProcessWorker !== false) await runWorker();

  const app: FastifyInstance = await buildGateway({
    config,
    pool,
    temporal,
    logger,
    tokens: { user: USER_TOKEN, operator: OPERATOR_TOKEN },
    agentIsolation: await agentIsolation(config.agentSandbox),
    agentNetwork: (await agentNetwork(config.agentSandbox, config.agentNetwork)).policy,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  const root = path.join(__dirname, '../..');
  // Service processes this harness started: close() ends those still running.
  const children: ChildProcess[] = [];
  const track = (child: ChildProcess) => {
    children.push(child);
    return child;
  };
  /**
   * The environment a service process of this harness reads: the same database, queue, host and
   * folders, and the run's workflow bundle, as the launcher gives its services (without it a
   * spawned worker ran webpack at each start: 1.5 s of CPU of its 5).
   */
  const serviceEnv = (extra: Record<string, string>): Record<string, string> => ({
    ...(process.env as Record<string, string>),
    TWS_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TWS_TASK_QUEUE: config.taskQueue,
    TWS_TEMPORAL_UI_URL: config.temporalUiUrl ?? '',
    TWS_HOST_ID: config.hostId,
    TWS_DATA_DIR: config.dataDir,
    TWS_WORKSPACE_ROOT: config.workspaceRoot,
    TWS_LOG_DIR: config.logDir,
    TWS_GIT_BINARY: config.gitBinary,
    TWS_AGENT_STOP_GRACE_MS: String(config.agentStopGraceMs),
    TWS_LOCAL_EXECUTOR: config.localExecutor,
    TWS_CLEANUP_RETRY_WAITS_MS: config.cleanupPolicy.waitsMs.join(','),
    TWS_CLEANUP_MAX_ATTEMPTS: String(config.cleanupPolicy.maxAttempts),
    TWS_STEP_HEARTBEAT_TIMEOUT_MS: String(config.cleanupPolicy.heartbeatTimeoutMs),
    TWS_WORKFLOW_TASK_TIMEOUT_MS: String(config.workflowTaskTimeoutMs),
    TWS_MIN_FREE_DISK:
      config.minFreeDisk.kind === 'bytes'
        ? String(config.minFreeDisk.bytes)
        : config.minFreeDisk.kind === 'percent'
          ? `${config.minFreeDisk.percent}%`
          : '',
    ...extra,
  });

  return {
    config,
    pool,
    databaseUrl,
    temporal,
    scratch,
    baseUrl,
    api: (method, url, body, token = USER_TOKEN) => request(baseUrl, method, url, body, token),
    startWorker: runWorker,
    spawnWorker(extraEnv = {}, logFile?: string) {
      // The compiled worker that `make start` runs (global-setup builds it once per run).
      const out = logFile ? openSync(logFile, 'a') : null;
      const child = track(
        spawn(process.execPath, serviceArgs(root, 'worker/main.ts'), {
          env: serviceEnv(extraEnv),
          stdio: ['ignore', out ?? 'ignore', out ?? 'inherit'],
        }),
      );
      if (out !== null) closeSync(out);
      return child;
    },
    async spawnGateway(extraEnv = {}, stderrFile?: string, stdoutFile?: string) {
      // A port is free when picked and may be taken before the gateway binds it: the gateway that
      // answers must be this child (listensOn), else it is started again on another port.
      // A port of the test's own (`TWS_API_PORT` in extraEnv): a gateway started again where a page still looks.
      for (let attempt = 1; ; attempt++) {
        const port = extraEnv.TWS_API_PORT ? Number(extraEnv.TWS_API_PORT) : await freePort();
        const env = serviceEnv({
          TWS_API_PORT: String(port),
          TWS_USER_TOKEN: USER_TOKEN,
          TWS_OPERATOR_TOKEN: OPERATOR_TOKEN,
          ...extraEnv,
        });
        const errorOut = stderrFile ? openSync(stderrFile, 'a') : null;
        const out = stdoutFile ? openSync(stdoutFile, 'a') : null;
        const child = track(
          spawn(process.execPath, serviceArgs(root, 'client/gateway/main.ts'), {
            env,
            stdio: ['ignore', out ?? 'ignore', errorOut ?? 'inherit'],
          }),
        );
        if (errorOut !== null) closeSync(errorOut);
        if (out !== null) closeSync(out);
        const url = `http://127.0.0.1:${port}`;
        const deadline = Date.now() + 60_000;
        let ours = false;
        for (;;) {
          if (child.exitCode !== null) {
            if (attempt < 3 && portTaken(port)) break;
            throw new Error(`the gateway exited (${child.exitCode})`);
          }
          if ((await fetch(`${url}/readyz`).catch(() => null))?.ok) {
            ours = listensOn(child.pid!, port);
            if (ours || attempt >= 3) break;
            child.kill('SIGKILL'); // another process answers on its port: this one cannot bind it
            break;
          }
          if (Date.now() > deadline) throw new Error('the gateway did not become ready');
          await new Promise((r) => setTimeout(r, 100));
        }
        if (!ours) {
          if (attempt >= 3) throw new Error(`the gateway's port ${port} was taken by another process`);
          continue;
        }
        return {
          child,
          url,
          api: (method: string, route: string, body?: unknown, token: string | null = USER_TOKEN) =>
            request(url, method, route, body, token),
        };
      }
    },
    async stopWorker() {
      if (worker) await worker.shutdown();
      worker = null;
    },
    async close() {
      // Agents are detached by design: the harness ends every one this system started.
      for (const row of (await pool.query<{ pid: number }>('SELECT pid FROM executions')).rows) {
        try {
          process.kill(-row.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await app.close();
      if (worker) await worker.shutdown();
      await nativeConnection.close();
      await pool.end();
      // An agent killed a moment ago may still have its objects brought home into a repository of
      // the scratch folder (its exit's collection): rm tries again on ENOTEMPTY rather than fail.
      await rm(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
      removeInstanceGroups(config.limits.cgroupParent);
    },
  };
}

/**
 * The control groups of a harness's own instance (task-workspaces/<instance>), emptied folders
 * removed deepest first, so that a run leaves no folder per harness behind; one still in use (an
 * agent killed a moment ago) stays. Never the shared parent itself.
 */
function removeInstanceGroups(parent: string): void {
  if (!parent.startsWith('task-workspaces/')) return;
  const remove = (dir: string): void => {
    let children: string[] = [];
    try {
      children = readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch {
      return; // not there: nothing was made in this hierarchy
    }
    for (const child of children) remove(path.join(dir, child));
    try {
      rmdirSync(dir);
    } catch {
      // still in use: left as it is
    }
  };
  for (const hierarchy of ['memory', 'pids', 'cpu', '']) remove(path.join('/sys/fs/cgroup', hierarchy, parent));
}

async function request(
  baseUrl: string,
  method: string,
  url: string,
  body: unknown,
  token: string | null,
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(baseUrl + url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (metrics)
  }
  return { status: res.status, body: parsed };
}

/** A TCP port nothing listens on at the moment. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

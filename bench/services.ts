/**
 * The system under test, as `make start` runs it but private to one benchmark run: its own
 * scratch folder, embedded PostgreSQL (or a fresh database on DATABASE_URL's server), an
 * in-memory Temporal dev server, and the worker and the gateway as child processes so their
 * memory can be read from /proc.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ensureDatabase, startEmbeddedPostgres, type PostgresService } from '../client/launcher/postgres-service';
import { prepareServices } from '../client/launcher/prepare-services';
import { resolveTemporalCli } from '../client/launcher/temporal-cli';
import { loadConfig } from '../domain/config';
import { SEARCH_ATTRIBUTES } from '../domain/search-attributes';
import { buildServices, bundleWorkflowsTo, serviceArgs, SERVICE_ENV } from '../client/launcher/service-build';
import { gitTraceWrapper } from './git-trace';
import { freePort, isRunning, sleep, startLogged, stopProcess, type ServiceProcess } from './processes';

export interface Services {
  root: string;
  scratch: string;
  dataDir: string;
  /** The worker's workspace root, as a real path (what the product records). */
  workspaceRoot: string;
  databaseUrl: string;
  temporalAddress: string;
  apiBase: string;
  /** The host the worker and the gateway run as (scenario 15 and 16 add a second one beside it). */
  hostId: string;
  tokens: { user: string; operator: string };
  worker: ServiceProcess;
  gateway: ServiceProcess;
  /** The Temporal dev server and the embedded PostgreSQL postmaster (null when DATABASE_URL is used). */
  temporalPid: number;
  postgresPid: number | null;
  versions: { postgres: string; temporalCli: string };
  /**
   * Stops the worker and starts it again with `env` over its start-up environment (an empty
   * object: as it first started), for settings read only at start (the disk measurement's
   * period). `services.worker` is the new process once it says it runs; `onWorkerRestart`
   * listeners (the CPU meter, the memory sampler) learn its pid.
   */
  restartWorker(env: Record<string, string>): Promise<ServiceProcess>;
  onWorkerRestart(listener: (pid: number) => void): void;
  /**
   * The same for the gateway (settings read at start: tracing's OTEL_* variables), on the same
   * port and with the same arguments; resolves once the new process answers `/readyz`.
   */
  restartGateway(env: Record<string, string>): Promise<ServiceProcess>;
  onGatewayRestart(listener: (pid: number) => void): void;
  /**
   * A second host on this machine beside the first: its own worker and gateway (host id `hostId`,
   * its own agent root and API port, the same database, engine and tokens), started with `env` over
   * the first pair's environment. What one setting costs is measured by sending each sample to the
   * two hosts in turn, so the drift of a run falls on both alike.
   */
  startTwin(hostId: string, env: Record<string, string>): Promise<TwinHost>;
  stop(): Promise<void>;
}

interface TwinHost {
  hostId: string;
  apiBase: string;
  /** Stops its worker and gateway and starts them again with `env` over the first pair's environment. */
  restart(env: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

function serverPart(url: string): string {
  const u = new URL(url);
  u.pathname = '';
  return u.toString().replace(/\/$/, '');
}

async function waitForReady(url: string, isAlive: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!isAlive()) throw new Error('the gateway exited during start-up');
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready within ${timeoutMs} ms`);
    await sleep(250);
  }
}

export async function startServices(root: string, log: (msg: string) => void): Promise<Services> {
  const scratch = await realpath(await mkdtemp(path.join(os.tmpdir(), 'tws-bench-')));
  // Readable by the postgres user that embedded PostgreSQL runs as when we are root.
  await chmod(scratch, 0o755);
  const dataDir = path.join(scratch, 'data');
  const logDir = path.join(scratch, 'logs');
  await mkdir(dataDir, { recursive: true });
  await mkdir(logDir, { recursive: true });

  let postgres: PostgresService | null = null;
  let temporal: ChildProcess | null = null;
  let worker: ServiceProcess | null = null;
  let gateway: ServiceProcess | null = null;
  let externalDb: { serverUrl: string; name: string } | null = null;

  let stopped = false;
  const twins: TwinHost[] = [];
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await Promise.all(twins.map((twin) => twin.stop()));
    await Promise.all([stopProcess(gateway?.child ?? null), stopProcess(worker?.child ?? null)]);
    await stopProcess(temporal, 5_000);
    if (postgres) await postgres.stop().catch(() => {});
    if (externalDb) {
      const admin = new pg.Client({ connectionString: `${externalDb.serverUrl}/postgres` });
      await admin
        .connect()
        .then(() => admin.query(`DROP DATABASE IF EXISTS "${externalDb!.name}" WITH (FORCE)`))
        .catch(() => {});
      await admin.end().catch(() => {});
    }
    if (process.env.BENCH_KEEP_SCRATCH === '1') log(`scratch kept: ${scratch}`);
    else await rm(scratch, { recursive: true, force: true }).catch(() => {});
  };

  try {
    const [pgPort, temporalPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const temporalAddress = `127.0.0.1:${temporalPort}`;
    const cli = resolveTemporalCli(root);
    const temporalLog = createWriteStream(path.join(logDir, 'temporal.log'));
    temporal = spawn(
      cli,
      [
        'server',
        'start-dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(temporalPort),
        '--headless',
        '--log-level',
        'warn',
        ...SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]),
      ],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    temporal.stdout!.pipe(temporalLog);
    temporal.stderr!.pipe(temporalLog);

    let databaseUrl: string;
    if (process.env.DATABASE_URL) {
      externalDb = {
        serverUrl: serverPart(process.env.DATABASE_URL),
        name: `tws_bench_${randomBytes(6).toString('hex')}`,
      };
      databaseUrl = await ensureDatabase(externalDb.serverUrl, externalDb.name);
    } else {
      log(`embedded PostgreSQL on port ${pgPort}`);
      postgres = await startEmbeddedPostgres({
        dataDir: path.join(scratch, 'pg'),
        port: pgPort,
        password: randomBytes(12).toString('hex'),
      });
      databaseUrl = await ensureDatabase(postgres.serverUrl, 'task_workspaces');
    }
    const tokens = { user: randomBytes(18).toString('base64url'), operator: randomBytes(18).toString('base64url') };
    const env: NodeJS.ProcessEnv = {
      // As the launcher starts them (client/launcher/service-build.ts SERVICE_ENV).
      ...SERVICE_ENV,
      // The benchmark measures against its own dev server, with no credentials: an engine's
      // settings in the shell (an API key, a profile) are not this engine's.
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TEMPORAL_'))),
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TWS_USER_TOKEN: tokens.user,
      TWS_OPERATOR_TOKEN: tokens.operator,
      TWS_DATA_DIR: dataDir,
      TWS_API_PORT: String(apiPort),
      TWS_HOST_ID: 'bench',
    };
    if (process.env.BENCH_GIT_TRACE === '1') {
      const trace = await gitTraceWrapper(scratch);
      env.TWS_GIT_BINARY = trace.binary;
      log(`git trace (diagnostic, slows git down): ${trace.traceFile}`);
    }
    // The same configuration the worker and the gateway will read (the worker makes its Temporal schedules from it).
    const config = loadConfig(env, { cwd: root, hostname: 'bench' });
    const temporalProcess = temporal;
    await prepareServices({
      databaseUrl,
      temporalAddress,
      namespace: config.temporalNamespace,
      isTemporalDead: () => !isRunning(temporalProcess),
      engineEnv: env,
    });

    // As `make start` does: the services run compiled (client/launcher/service-build.ts).
    buildServices(root);
    const node = (entry: string) => serviceArgs(root, entry);
    // As `make start` does: the workflow bundle is made ahead, so webpack never runs in the worker.
    env.TWS_WORKFLOW_BUNDLE = path.join(scratch, 'workflow-bundle.js');
    bundleWorkflowsTo(root, env.TWS_WORKFLOW_BUNDLE);
    // BENCH_WORKER_PROF=1 (diagnostic): a V8 CPU profile of the worker, written when it stops.
    const profile =
      process.env.BENCH_WORKER_PROF === '1'
        ? ['--cpu-prof', `--cpu-prof-dir=${path.join(logDir, 'worker-profile')}`]
        : [];
    worker = startLogged('worker', process.execPath, [...profile, ...node('worker/main.ts')], {
      cwd: root,
      env,
      logFile: path.join(logDir, 'worker.log'),
    });
    // BENCH_GATEWAY_PROF=1 (diagnostic): the same for the gateway (it runs this host's launches and resumes).
    const gatewayProfile =
      process.env.BENCH_GATEWAY_PROF === '1'
        ? ['--cpu-prof', `--cpu-prof-dir=${path.join(logDir, 'gateway-profile')}`]
        : [];
    // BENCH_GATEWAY_HEAP=1 (diagnostic): SIGUSR2 writes a heap snapshot of the gateway into the logs folder.
    const gatewayHeap =
      process.env.BENCH_GATEWAY_HEAP === '1' ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${logDir}`] : [];
    const gatewayArgs = [...gatewayProfile, ...gatewayHeap, ...node('client/gateway/main.ts')];
    gateway = startLogged('gateway', process.execPath, gatewayArgs, {
      cwd: root,
      env,
      logFile: path.join(logDir, 'gateway.log'),
    });
    const gatewayChild = gateway.child;
    const apiBase = `http://127.0.0.1:${apiPort}`;
    log('waiting for the worker (workflow bundle) and the gateway');
    await Promise.all([
      worker.waitForOutput('worker running', 180_000),
      waitForReady(`${apiBase}/readyz`, () => isRunning(gatewayChild), 120_000),
    ]);

    const versionClient = new pg.Client({ connectionString: databaseUrl });
    await versionClient.connect();
    const pgVersion = (await versionClient.query<{ server_version: string }>('SHOW server_version')).rows[0]!
      .server_version;
    await versionClient.end();
    const workspaceRoot = await realpath(path.join(dataDir, 'workspaces'));
    const postgresPid = postgres
      ? Number((await readFile(path.join(scratch, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]) || null
      : null;
    const workerArgs = [...profile, ...node('worker/main.ts')];
    const restartListeners: ((pid: number) => void)[] = [];
    const gatewayRestartListeners: ((pid: number) => void)[] = [];
    const services: Services = {
      root,
      scratch,
      dataDir,
      workspaceRoot,
      databaseUrl,
      temporalAddress,
      apiBase,
      hostId: 'bench',
      tokens,
      worker,
      gateway,
      temporalPid: temporal.pid!,
      postgresPid,
      versions: { postgres: pgVersion, temporalCli: execFileSync(cli, ['--version'], { encoding: 'utf8' }).trim() },
      async restartWorker(extra) {
        await stopProcess(worker?.child ?? null);
        worker = startLogged('worker', process.execPath, workerArgs, {
          cwd: root,
          env: { ...env, ...extra },
          logFile: path.join(logDir, 'worker.log'),
        });
        await worker.waitForOutput('worker running', 180_000);
        services.worker = worker;
        for (const listener of restartListeners) listener(worker.pid);
        return worker;
      },
      onWorkerRestart(listener) {
        restartListeners.push(listener);
      },
      async restartGateway(extra) {
        await stopProcess(gateway?.child ?? null);
        const started = startLogged('gateway', process.execPath, gatewayArgs, {
          cwd: root,
          env: { ...env, ...extra },
          logFile: path.join(logDir, 'gateway.log'),
        });
        gateway = started;
        await waitForReady(`${apiBase}/readyz`, () => isRunning(started.child), 120_000);
        services.gateway = started;
        for (const listener of gatewayRestartListeners) listener(started.pid);
        return started;
      },
      onGatewayRestart(listener) {
        gatewayRestartListeners.push(listener);
      },
      async startTwin(hostId, extra) {
        const port = await freePort();
        const agentRoot = path.join(scratch, `twin-${hostId}`);
        await mkdir(agentRoot, { recursive: true });
        const twinEnv = { ...env, TWS_HOST_ID: hostId, TWS_AGENT_ROOT: agentRoot, TWS_API_PORT: String(port) };
        const twinBase = `http://127.0.0.1:${port}`;
        let pair: ServiceProcess[] = [];
        const stopPair = async () => {
          await Promise.all(pair.map((p) => stopProcess(p.child)));
          pair = [];
        };
        const startPair = async (over: Record<string, string>) => {
          const logFile = (name: string) => path.join(logDir, `${hostId}-${name}.log`);
          const twinWorker = startLogged(`${hostId} worker`, process.execPath, workerArgs, {
            cwd: root,
            env: { ...twinEnv, ...over },
            logFile: logFile('worker'),
          });
          const twinGateway = startLogged(`${hostId} gateway`, process.execPath, gatewayArgs, {
            cwd: root,
            env: { ...twinEnv, ...over },
            logFile: logFile('gateway'),
          });
          pair = [twinWorker, twinGateway];
          await Promise.all([
            twinWorker.waitForOutput('worker running', 180_000),
            waitForReady(`${twinBase}/readyz`, () => isRunning(twinGateway.child), 120_000),
          ]);
        };
        const twin: TwinHost = {
          hostId,
          apiBase: twinBase,
          async restart(over) {
            await stopPair();
            await startPair(over);
          },
          stop: stopPair,
        };
        twins.push(twin);
        await startPair(extra);
        return twin;
      },
      stop,
    };
    return services;
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The system for one test file: its own database (migrated), its own task queue and host id,
 * an in-process worker on the shared Temporal dev server, and a gateway listening on a real port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import { buildGateway } from '../../client/gateway/app';
import { ensureDatabase } from '../../client/postgres-service';
import { migrate } from '../../db/migrate';
import { createPool } from '../../db/pool';
import { serviceArgs } from '../../client/service-build';
import { loadConfig, type Config } from '../../domain/config';
import { startWorker, type WorkerHandle } from '../../worker/worker';
import { prepareWorkspaceRoot } from '../../worker/workspace-root';

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
  api<T = any>(method: string, url: string, body?: unknown, token?: string | null): Promise<{ status: number; body: T }>;
  startWorker(overrides?: Partial<Config>): Promise<WorkerHandle>;
  /** The worker as its own process (for SIGKILL tests), with this harness's configuration. */
  spawnWorker(extraEnv?: Record<string, string>): ChildProcess;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export async function createHarness(overrides: Partial<Config> = {}, opts: { temporalAddress?: string; inProcessWorker?: boolean } = {}): Promise<Harness> {
  const scratch = await realpath(await mkdtemp(path.join(os.tmpdir(), 'tws-test-')));
  const dbName = `tws_${randomUUID().replace(/-/g, '')}`;
  const databaseUrl = await ensureDatabase(inject('postgresServerUrl'), dbName);
  await migrate(databaseUrl);
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
      TWS_CLEANUP_RETRY_WAITS_MS: '200,400',
      TWS_CLEANUP_MAX_ATTEMPTS: '3',
    },
    { cwd: scratch, hostname: 'test' },
  );
  const config = await prepareWorkspaceRoot({ ...base, ...overrides });
  const logger = pino({ level: process.env.TWS_TEST_LOG ?? 'silent' });
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  const temporal = new Client({ connection: await Connection.connect({ address: temporalAddress }), namespace: config.temporalNamespace });

  let worker: WorkerHandle | null = null;
  const runWorker = async (extra: Partial<Config> = {}) => {
    worker = await startWorker({ config: { ...config, ...extra }, pool, logger, connection: nativeConnection, workflowBundle: { codePath: inject('workflowBundlePath') } });
    return worker;
  };
  if (opts.inProcessWorker !== false) await runWorker();

  const app: FastifyInstance = await buildGateway({ config, pool, temporal, logger, tokens: { user: USER_TOKEN, operator: OPERATOR_TOKEN } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  return {
    config,
    pool,
    databaseUrl,
    temporal,
    scratch,
    baseUrl,
    async api(method, url, body, token = USER_TOKEN) {
      const headers: Record<string, string> = {};
      if (token) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(baseUrl + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      let parsed: any = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        // not JSON (metrics)
      }
      return { status: res.status, body: parsed };
    },
    startWorker: runWorker,
    spawnWorker(extraEnv = {}) {
      const env: Record<string, string> = {
        ...(process.env as Record<string, string>),
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: temporalAddress,
        TWS_TASK_QUEUE: config.taskQueue,
        TWS_HOST_ID: config.hostId,
        TWS_DATA_DIR: config.dataDir,
        TWS_WORKSPACE_ROOT: config.workspaceRoot,
        TWS_LOG_DIR: config.logDir,
        TWS_GIT_BINARY: config.gitBinary,
        TWS_AGENT_STOP_GRACE_MS: String(config.agentStopGraceMs),
        TWS_CLEANUP_RETRY_WAITS_MS: config.cleanupPolicy.waitsMs.join(','),
        TWS_CLEANUP_MAX_ATTEMPTS: String(config.cleanupPolicy.maxAttempts),
        ...extraEnv,
      };
      // The compiled worker that `make start` runs (global-setup builds it once per run).
      return spawn(process.execPath, serviceArgs(path.join(__dirname, '../..'), 'worker/main.ts'), { env, stdio: ['ignore', 'ignore', 'inherit'] });
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
      await app.close();
      if (worker) await worker.shutdown();
      await nativeConnection.close();
      await temporal.connection.close();
      await pool.end();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

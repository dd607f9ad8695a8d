/**
 * The engine behind real credentials: the run's dev server behind a mutual-TLS
 * endpoint that checks the client certificate, and behind an endpoint that checks the API key on
 * every gRPC call as the SDK sends it (test/support/engine-proxy.ts). The worker, the gateway and
 * the set-up run as their own processes with nothing but the standard TEMPORAL_* variables, and
 * no worker of the test's own runs: a launch, an archive and the CLI go through, and the proxy's
 * counters show the traffic went its way. A wrong certificate, a wrong key or a certificate file
 * that is not there fails start-up in one line that names the problem, not a stack.
 */
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { serviceArgs } from '../client/launcher/service-build';
import { taskDirName } from '../domain/task-layout';
import { ORPHAN_SWEEP_SCHEDULE_ID } from '../domain/workflow-ids';
import { archive, waitForJob } from './support/cleanup';
import {
  makeTestCertificates,
  PROXY_SERVER_NAME,
  startApiKeyProxy,
  startMtlsProxy,
  type EngineProxy,
  type TestCertificates,
} from './support/engine-proxy';
import { harnessesPerTest, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { makeRepo, worktreePaths } from './support/world';

const { harness, cleanups } = harnessesPerTest();
const root = path.join(__dirname, '..');
const API_KEY = `tws-test-key-${randomUUID()}`;

let certs: TestCertificates;
let mtls: EngineProxy;
let keyed: EngineProxy;

beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tws-engine-tls-'));
  certs = await makeTestCertificates(dir);
  mtls = await startMtlsProxy(inject('temporalAddress'), certs);
  keyed = await startApiKeyProxy(inject('temporalAddress'), certs, API_KEY);
  // Run after every harness's close (last registered, first run): the proxies outlive the processes.
  cleanups.push(
    () => rm(dir, { recursive: true, force: true }),
    () => mtls.close(),
    () => keyed.close(),
  );
}, 60_000);

/** How a process is told where the engine is and how to prove who it is: only the standard variables. */
const trustProxy = () => ({
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.caCert,
  TEMPORAL_TLS_SERVER_NAME: PROXY_SERVER_NAME,
});
const withCertificate = (cert: string, key: string) => ({
  TEMPORAL_ADDRESS: mtls.address,
  ...trustProxy(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
  TEMPORAL_TLS_CLIENT_KEY_PATH: key,
});
const withApiKey = (apiKey: string) => ({ TEMPORAL_ADDRESS: keyed.address, ...trustProxy(), TEMPORAL_API_KEY: apiKey });

/**
 * A launch, an archive whose cleanup job ends, the set-up and the CLI, all through the gateway and
 * the worker that `engineEnv` points at the proxy. The harness runs no worker of its own, and its
 * in-process gateway is not used: every request goes to the spawned gateway.
 */
async function systemGoesThrough(proxy: () => EngineProxy, engineEnv: () => Record<string, string>) {
  const h = await harness({}, { inProcessWorker: false });
  const refusedBefore = proxy().refused;
  h.spawnWorker(engineEnv());
  // Its host's schedules exist once the worker has set them up through the proxy (the worker's first call).
  await waitUntil(
    () =>
      h.temporal.schedule
        .getHandle(`${ORPHAN_SWEEP_SCHEDULE_ID}-${h.config.hostId}`)
        .describe()
        .then(
          () => true,
          () => false,
        ),
    "the spawned worker's schedules",
  );
  const gateway = await h.spawnGateway(engineEnv());
  const via: Harness = { ...h, api: gateway.api, baseUrl: gateway.url };
  const acceptedAtStart = proxy().accepted;
  expect(acceptedAtStart).toBeGreaterThan(0);

  const name = `through-${randomUUID().slice(0, 8)}`;
  const repo = makeRepo(h.scratch, name);
  const repoId = await registerRepo(via, repo, name);
  const taskId = await createTask(via, [repoId]);
  const launched = await launch(via, taskId);
  expect(launched.status, JSON.stringify(launched.body)).toBe(201);
  const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), name);
  expect(worktreePaths(repo)).toEqual([repo, worktree]);
  const afterLaunch = proxy().accepted;

  const accepted = await archive(via, taskId);
  const job = await waitForJob(via, accepted.operationId);
  expect(job).toMatchObject({ taskId, trigger: 'archive', state: 'succeeded', lastError: null });
  expect(existsSync(worktree)).toBe(false);
  expect(worktreePaths(repo)).toEqual([repo]);
  expect(
    (await h.pool.query('SELECT state FROM cleanup_jobs WHERE operation_id = $1', [accepted.operationId])).rows,
  ).toEqual([{ state: 'succeeded' }]);

  // The set-up one-shot connects as the CLI helpers do (client/launcher/temporal.ts): search attributes, migrations.
  const setUp = await promisify(execFile)(process.execPath, serviceArgs(root, 'client/launcher/prepare-main.ts'), {
    env: { ...withoutEngineVariables(), DATABASE_URL: h.databaseUrl, ...engineEnv() },
    encoding: 'utf8',
  });
  expect(setUp.stdout).toContain('services prepared');
  // The operator CLI is a client of the HTTP API only (client/cli/cli.ts): it reads the job the engine ran.
  const cli = await promisify(execFile)(
    process.execPath,
    [path.join(root, 'bin/tws.mjs'), 'jobs', '--json', '--api', gateway.url],
    { env: { ...withoutEngineVariables(), TWS_OPERATOR_TOKEN: OPERATOR_TOKEN }, encoding: 'utf8' },
  );
  expect(JSON.parse(cli.stdout)).toEqual([
    expect.objectContaining({ operationId: accepted.operationId, state: 'succeeded' }),
  ]);
  expect(proxy().refused).toBe(refusedBefore);
  return { acceptedAtStart, afterLaunch, afterAll: proxy().accepted };
}

/** The test runner's environment without any TEMPORAL_* of its own, so only what a test sets is read. */
function withoutEngineVariables(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string' && !entry[0].startsWith('TEMPORAL_'),
    ),
  );
}

/** The parts that connect to the engine at start: the worker, the gateway and the one-shot set-up. */
type Entry = 'worker/main.ts' | 'client/gateway/main.ts' | 'client/launcher/prepare-main.ts';

/**
 * A service started with `engineEnv` that must not start: its exit code, how long it ran and its
 * stderr. Spawned here rather than by the harness, which passes a child's stderr through.
 */
async function refusedStart(h: Harness, entry: Entry, engineEnv: Record<string, string>) {
  const { child, stderr } = startService(h, entry, engineEnv);
  const started = Date.now();
  const code = await new Promise<number | null>((resolve) => {
    const bound = setTimeout(() => {
      child.kill('SIGKILL');
    }, START_BOUND_MS);
    child.once('exit', (exitCode) => {
      clearTimeout(bound);
      resolve(exitCode);
    });
  });
  return {
    code,
    ms: Date.now() - started,
    lines: stderr()
      .split('\n')
      .filter((l) => l.trim()),
  };
}

/** A service of a host of its own, told of the engine by `engineEnv` alone (none of the runner's TEMPORAL_*). */
function startService(h: Harness, entry: Entry, engineEnv: Record<string, string>) {
  const own = `own-${randomUUID().slice(0, 8)}`;
  const child = spawn(process.execPath, serviceArgs(root, entry), {
    env: {
      ...withoutEngineVariables(),
      DATABASE_URL: h.databaseUrl,
      TWS_TASK_QUEUE: h.config.taskQueue,
      TWS_HOST_ID: own,
      TWS_DATA_DIR: h.config.dataDir,
      TWS_WORKSPACE_ROOT: path.join(h.scratch, own, 'workspaces'),
      TWS_LOG_DIR: path.join(h.scratch, own, 'logs'),
      TWS_MIN_FREE_DISK: '64MiB',
      TWS_USER_TOKEN: USER_TOKEN,
      TWS_OPERATOR_TOKEN: OPERATOR_TOKEN,
      TWS_API_PORT: '0',
      TWS_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      ...engineEnv,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  cleanups.push(() => void child.kill('SIGKILL'));
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return { child, hostId: own, stderr: () => stderr };
}

/** The worker's first call waits out the SDK's 10 s connect timeout; the line follows within a probe. */
const START_BOUND_MS = 30_000;

/** Exactly one line on stderr, the one expected, and nothing of a stack, a credential or a file's path. */
function expectOneLine(
  run: { code: number | null; ms: number; lines: string[] },
  line: RegExp,
  secrets: string[],
): void {
  expect(run.code, run.lines.join('\n')).toBe(1);
  expect(run.ms).toBeLessThan(START_BOUND_MS);
  expect(run.lines, run.lines.join('\n')).toHaveLength(1);
  expect(run.lines[0]).toMatch(line);
  expect(run.lines.some((l) => l.startsWith('    at '))).toBe(false);
  for (const secret of secrets) expect(run.lines[0]).not.toContain(secret);
}

describe('the engine behind mutual TLS', () => {
  it('with the CA’s client certificate, a launch, an archive and its cleanup job, the set-up and the CLI go through the TLS endpoint', async () => {
    const seen = await systemGoesThrough(
      () => mtls,
      () => withCertificate(certs.clientCert, certs.clientKey),
    );
    // Connections are long-lived: the worker's and the gateway's, then the set-up's own.
    expect(seen.afterAll).toBeGreaterThan(seen.acceptedAtStart);
  });

  it('a certificate of another CA: the worker, the gateway and the set-up exit in one line saying the engine refused the certificate', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const refusedBefore = mtls.refused;
    const stranger = withCertificate(certs.strangerCert, certs.strangerKey);
    const [worker, gateway, setUp] = await Promise.all([
      refusedStart(h, 'worker/main.ts', stranger),
      refusedStart(h, 'client/gateway/main.ts', stranger),
      refusedStart(h, 'client/launcher/prepare-main.ts', stranger),
    ]);
    const refused = (part: string) =>
      new RegExp(
        `^${part}: cannot reach the Temporal engine at ${mtls.address}: the engine refused this client's certificate`,
      );
    expectOneLine(worker, refused('worker'), [certs.strangerCert, certs.strangerKey, path.dirname(certs.caCert)]);
    expectOneLine(gateway, refused('gateway'), [certs.strangerCert, certs.strangerKey, path.dirname(certs.caCert)]);
    // The set-up (docker-compose's setup service, make start's) does not wait out its minute on a refusal.
    expectOneLine(setUp, refused('set-up failed'), [certs.strangerCert, certs.strangerKey, path.dirname(certs.caCert)]);
    expect(mtls.refused).toBeGreaterThanOrEqual(refusedBefore + 3);
  });

  it('a certificate file that is not there: one line naming the variable, not the path, and nothing is sent', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const missing = path.join(h.scratch, 'nowhere', 'client.pem');
    const refusedBefore = mtls.refused;
    const [worker, gateway, setUp] = await Promise.all([
      refusedStart(h, 'worker/main.ts', withCertificate(missing, certs.clientKey)),
      refusedStart(h, 'client/gateway/main.ts', withCertificate(missing, certs.clientKey)),
      refusedStart(h, 'client/launcher/prepare-main.ts', withCertificate(missing, certs.clientKey)),
    ]);
    const unreadable = (part: string) =>
      new RegExp(
        `^${part}: cannot reach the Temporal engine at ${mtls.address}: TEMPORAL_TLS_CLIENT_CERT_PATH names a file that cannot be read \\(ENOENT\\)$`,
      );
    expectOneLine(worker, unreadable('worker'), [missing, certs.clientKey]);
    expectOneLine(gateway, unreadable('gateway'), [missing, certs.clientKey]);
    expectOneLine(setUp, unreadable('set-up failed'), [missing, certs.clientKey]);
    expect(mtls.refused).toBe(refusedBefore);
  });
});

describe('an endpoint that closes after the TLS handshake, without an alert', () => {
  it('the set-up refuses in seconds, saying it may want a client certificate, instead of waiting out its minute; the worker and the gateway say the same', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const [key, cert] = await Promise.all([readFile(certs.serverKey), readFile(certs.serverCert)]);
    // Asks for no certificate and ends every connection once it is up: as a front that wants one does.
    const closing = tls.createServer({ key, cert, ALPNProtocols: ['h2'] }, (socket) => socket.destroy());
    await new Promise<void>((resolve) => closing.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => closing.close(() => resolve())));
    const address = `127.0.0.1:${(closing.address() as AddressInfo).port}`;
    const engine = { TEMPORAL_ADDRESS: address, ...trustProxy() };
    const [setUp, worker, gateway] = await Promise.all([
      refusedStart(h, 'client/launcher/prepare-main.ts', engine),
      refusedStart(h, 'worker/main.ts', engine),
      refusedStart(h, 'client/gateway/main.ts', engine),
    ]);
    const closedLine = (part: string) =>
      new RegExp(
        `^${part}: cannot reach the Temporal engine at ${address}: it closed the connection after the TLS handshake: does it want a client certificate`,
      );
    expectOneLine(setUp, closedLine('set-up failed'), [certs.caCert]);
    // The worker and the gateway, started alone against it, say the same in one line.
    expectOneLine(worker, closedLine('worker'), [certs.caCert]);
    expectOneLine(gateway, closedLine('gateway'), [certs.caCert]);
    // Well inside the minute a not-yet-started engine is waited for.
    expect(setUp.ms).toBeLessThan(20_000);
  });
});

describe('the engine behind an API key', () => {
  it('with the key, a launch, an archive and its cleanup job, the set-up and the CLI go through, every call checked', async () => {
    const seen = await systemGoesThrough(
      () => keyed,
      () => withApiKey(API_KEY),
    );
    // Every gRPC call is a stream of its own: the launch and the archive each passed more of them.
    expect(seen.afterLaunch).toBeGreaterThan(seen.acceptedAtStart);
    expect(seen.afterAll).toBeGreaterThan(seen.afterLaunch);
  });

  it('a profile alone (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE): its address, key and TLS reach the engine, as the Temporal tools read it', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const file = path.join(h.scratch, 'temporal.toml');
    await writeFile(
      file,
      [
        '[profile.cloud]',
        `address = "${keyed.address}"`,
        'namespace = "default"',
        `api_key = "${API_KEY}"`,
        '[profile.cloud.tls]',
        `server_ca_cert_path = "${certs.caCert}"`,
        `server_name = "${PROXY_SERVER_NAME}"`,
        '',
      ].join('\n'),
    );
    const acceptedBefore = keyed.accepted;
    const worker = startService(h, 'worker/main.ts', { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' });
    // The worker made its host's schedules on the engine behind the proxy: the profile's address and key.
    await waitUntil(
      () =>
        h.temporal.schedule
          .getHandle(`${ORPHAN_SWEEP_SCHEDULE_ID}-${worker.hostId}`)
          .describe()
          .then(
            () => true,
            () => false,
          ),
      "the profile-configured worker's schedules",
    );
    expect(worker.child.exitCode).toBeNull();
    expect(keyed.accepted).toBeGreaterThan(acceptedBefore);
    worker.child.kill('SIGTERM');
  });

  it('a wrong key: the worker, the gateway and the set-up exit in one line saying the engine refused the API key', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const refusedBefore = keyed.refused;
    const wrongKey = `wrong-${randomUUID()}`;
    const [worker, gateway, setUp] = await Promise.all([
      refusedStart(h, 'worker/main.ts', withApiKey(wrongKey)),
      refusedStart(h, 'client/gateway/main.ts', withApiKey(wrongKey)),
      refusedStart(h, 'client/launcher/prepare-main.ts', withApiKey(wrongKey)),
    ]);
    const refused = (part: string) =>
      new RegExp(
        `^${part}: cannot reach the Temporal engine at ${keyed.address}: the engine refused the API key in TEMPORAL_API_KEY \\(UNAUTHENTICATED\\)$`,
      );
    expectOneLine(worker, refused('worker'), [wrongKey, API_KEY]);
    expectOneLine(gateway, refused('gateway'), [wrongKey, API_KEY]);
    expectOneLine(setUp, refused('set-up failed'), [wrongKey, API_KEY]);
    expect(keyed.refused).toBeGreaterThanOrEqual(refusedBefore + 3);
  });
});

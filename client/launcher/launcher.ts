/**
 * `make start`: brings up the whole system on one machine. Embedded PostgreSQL unless
 * DATABASE_URL is set; the Temporal dev server (Web UI, SQLite under .data/) unless
 * TEMPORAL_ADDRESS is set, closed to everyone without the service's credentials
 * (client/launcher/engine-guard.ts); migrations; the worker and the API gateway. Once up, a part that dies
 * is started again (client/launcher/supervisor.ts) and nothing else is touched. Ctrl-C stops what it
 * started: the services, then Temporal, then PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, localApiUrl, socketAddressOf } from '../../domain/config';
import { SEARCH_ATTRIBUTES } from '../../domain/search-attributes';
import { freeLoopbackPorts, portProblem } from './listen-ports';
import { ensureDatabase, startEmbeddedPostgres } from './postgres-service';
import { resolveTemporalCli } from './temporal-cli';
import { engineClientEnv, ensureEngineCredentials } from './engine-credentials';
import {
  engineGuardProblem,
  waitForEngineBehindFront,
  engineSockets,
  guardedEngineCommand,
  startEngineFront,
  type EngineFront,
} from './engine-guard';
import { prepareServices } from './prepare-services';
import { adoptEngineProfile } from '../../worker/engine-connection';
import { buildServices, bundleWorkflowsTo, SERVICE_ENV, serviceArgs } from './service-build';
import { claimDataFolder } from './data-folder-claim';
import { INSTANCE_REGISTRY, registerAgentUids } from './instance-registry';
import { LaunchedParts } from './launcher-parts';
import { agentsLeftLine } from './agents-left';
import { errorLine, spawnPart } from './supervisor';
import { failureLine, openServiceLog, type ServiceLog } from './service-log';
import { agentRootOutside } from '../../executors/host/agent-owner';

const root = path.resolve(__dirname, '../..');

interface Secrets {
  userToken: string;
  operatorToken: string;
  postgresPassword: string;
}

async function loadSecrets(file: string): Promise<Secrets> {
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as Secrets;
  const secrets: Secrets = {
    userToken: randomBytes(24).toString('base64url'),
    operatorToken: randomBytes(24).toString('base64url'),
    postgresPassword: randomBytes(18).toString('base64url'),
  };
  await writeFile(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  return secrets;
}

/** How long the API gets to answer /readyz after the services started. */
const READY_TIMEOUT_MS = 90_000;

/** The address the launcher itself calls the API on. */
async function waitUntilReady(url: string, failed: () => string | null): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const failure = failed();
    if (failure) throw new Error(failure);
    if ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(() => null))?.ok) return;
    if (Date.now() > deadline)
      throw new Error(`the API did not answer ${url}/readyz within ${READY_TIMEOUT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  // A profile asked for by name or file is an engine named as TEMPORAL_ADDRESS names one (a
  // personal default profile of the Temporal CLI does not turn the bundled engine off).
  if (process.env.TEMPORAL_PROFILE || process.env.TEMPORAL_CONFIG_FILE) adoptEngineProfile();
  // TEMPORAL_ADDRESS means "use that server"; TWS_TEMPORAL_PORT is where the dev server listens.
  const temporalPort = Number(process.env.TWS_TEMPORAL_PORT || 7233);
  const temporalAddress = process.env.TEMPORAL_ADDRESS || `127.0.0.1:${temporalPort}`;
  const config = loadConfig(
    { ...process.env, TEMPORAL_ADDRESS: temporalAddress },
    { cwd: root, hostname: os.hostname(), cpus: os.availableParallelism() },
  );
  // Before anything is checked, written or started: a second start on this folder touches nothing.
  const claim = await claimDataFolder(config.dataDir);
  if (!claim.taken)
    startupFailed(
      `another make start (pid ${claim.heldBy}) uses this data folder (${config.dataDir}): stop it first (Ctrl-C where it runs), or give this one its own TWS_DATA_DIR`,
    );
  // Agent uids of its own among the host's instances: never a uid another instance's workspaces have.
  const uidsTaken = await registerAgentUids(config, process.env.TWS_INSTANCE_REGISTRY || INSTANCE_REGISTRY);
  if (uidsTaken) startupFailed(uidsTaken);
  const uiPort = Number(process.env.TWS_TEMPORAL_UI_PORT || 8233);
  const pgPort = Number(process.env.TWS_PG_PORT || 54329);
  const temporalServer = !process.env.TEMPORAL_ADDRESS;
  // The bundled engine is closed by default; `open` is the old, unguarded dev server.
  const engineGuard = process.env.TWS_ENGINE_GUARD || 'on';
  if (engineGuard !== 'on' && engineGuard !== 'open') startupFailed('TWS_ENGINE_GUARD must be on or open');
  const engineGuarded = temporalServer && engineGuard === 'on';
  const guardProblem = engineGuarded ? await engineGuardProblem() : null;
  if (guardProblem) startupFailed(guardProblem);
  let engineFront: EngineFront | null = null;

  // Before anything starts, so a taken port is one line and nothing is left to stop.
  const taken = await portProblem([
    ...(config.databaseUrl
      ? []
      : [{ port: pgPort, host: '127.0.0.1', what: 'embedded PostgreSQL', variable: 'TWS_PG_PORT' }]),
    ...(temporalServer
      ? [
          { port: temporalPort, host: '127.0.0.1', what: 'the Temporal dev server', variable: 'TWS_TEMPORAL_PORT' },
          { port: uiPort, host: '127.0.0.1', what: 'the Temporal Web UI', variable: 'TWS_TEMPORAL_UI_PORT' },
        ]
      : []),
    { port: config.apiPort, host: config.apiHost, what: 'the API gateway', variable: 'TWS_API_PORT' },
    ...(config.sdkMetricsAddress
      ? [{ ...config.sdkMetricsAddress, what: "the worker's SDK metrics", variable: 'TWS_SDK_METRICS_ADDRESS' }]
      : []),
  ]);
  if (taken) startupFailed(taken);
  // Each service serves its Temporal SDK metrics on an address of its own (one setting, two
  // processes): the worker where TWS_SDK_METRICS_ADDRESS says, else a free loopback port (said
  // below); the gateway on a free loopback port that its own /metrics reads.
  const [workerSdkPort, gatewaySdkPort] = await freeLoopbackPorts(2);
  const sdkMetrics = {
    worker: config.sdkMetricsAddress ?? { host: '127.0.0.1', port: workerSdkPort! },
    gateway: { host: '127.0.0.1', port: gatewaySdkPort! },
  };

  // Enterable by the postgres account that embedded PostgreSQL runs as under root, where the
  // folders above let it in (client/launcher/postgres-account.ts); the secrets file inside is 0600.
  await mkdir(config.dataDir, { recursive: true });
  await chmod(config.dataDir, 0o755);
  const secretsFile = path.join(config.dataDir, 'secrets.json');
  const secrets = await loadSecrets(secretsFile);
  const pidsFile = path.join(config.dataDir, 'pids.json');
  let serviceLog: ServiceLog | null = null;

  const parts = new LaunchedParts(pidsFile, async (layer) => {
    if (layer === 'temporal' && engineFront) {
      await engineFront.close();
      await rm(engineSockets(config.dataDir).dir, { recursive: true, force: true });
    }
  });

  // The parts run in sessions of their own (detached), so a closed terminal (SIGHUP) reaches the
  // launcher alone: it stops them rather than leave them behind.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void parts.stopAll(0));
  // A fault nobody caught is one line, and what was started is stopped rather than left behind.
  for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
    process.on(event, (err: unknown) => {
      console.error(`launcher: ${errorLine(err)}`);
      void parts.stopAll(1);
    });
  }

  let databaseUrl = config.databaseUrl;
  /** The bundled engine's client credentials, for the services (none with TEMPORAL_ADDRESS: the operator's own settings pass through). */
  const engineEnv: Record<string, string> = {};
  const apiUrl = localApiUrl(config.apiHost, config.apiPort);
  try {
    if (!databaseUrl) {
      const pgOptions = {
        dataDir: path.join(config.dataDir, 'postgres'),
        port: pgPort,
        password: secrets.postgresPassword,
        ownProcessGroup: true,
      };
      let serverUrl = '';
      await parts.run('postgres', 'postgres', async () => {
        const server = await startEmbeddedPostgres(pgOptions);
        serverUrl = server.serverUrl;
        return server;
      });
      databaseUrl = await ensureDatabase(serverUrl, 'task_workspaces');
    }

    if (temporalServer) {
      const cli = resolveTemporalCli(root);
      const [ip, port] = temporalAddress.split(':');
      const serverArgs = [
        'server',
        'start-dev',
        '--db-filename',
        path.join(config.dataDir, 'temporal.sqlite'),
        '--namespace',
        config.temporalNamespace,
        '--log-level',
        'warn',
        ...SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]),
      ];
      if (engineGuarded) {
        // Its own network namespace, reached through the fronts (client/launcher/engine-guard.ts).
        const credentials = await ensureEngineCredentials(config.dataDir);
        Object.assign(engineEnv, engineClientEnv(credentials));
        const guarded = await guardedEngineCommand(cli, serverArgs, config.dataDir);
        engineFront = await startEngineFront({
          dataDir: config.dataDir,
          host: ip!,
          grpcPort: Number(port),
          uiPort,
          credentials,
          operatorToken: config.operatorToken ?? secrets.operatorToken,
        });
        await parts.run('temporal', 'temporal', () =>
          spawnPart(guarded.command, guarded.args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] }),
        );
        await waitForEngineBehindFront(config.dataDir, () => parts.startupDeath !== null);
      } else {
        const args = [...serverArgs, '--ip', ip!, '--port', port!, '--ui-port', String(uiPort)];
        await parts.run('temporal', 'temporal', () =>
          spawnPart(cli, args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] }),
        );
      }
    }

    if (config.containers.managedPodman && config.containers.engineSocket)
      await parts.runPodmanService(config.containers.engineSocket, root);

    await prepareServices({
      databaseUrl,
      temporalAddress,
      namespace: config.temporalNamespace,
      isTemporalDead: () => parts.startupDeath !== null,
      engineEnv: { ...process.env, ...engineEnv },
    });

    const workflowBundle = path.join(config.dataDir, 'workflow-bundle.js');
    buildServices(root);
    bundleWorkflowsTo(root, workflowBundle);

    const env: NodeJS.ProcessEnv = {
      ...SERVICE_ENV,
      ...process.env,
      ...engineEnv,
      TWS_WORKFLOW_BUNDLE: workflowBundle,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TWS_USER_TOKEN: config.userToken ?? secrets.userToken,
      TWS_OPERATOR_TOKEN: config.operatorToken ?? secrets.operatorToken,
      TWS_DATA_DIR: config.dataDir,
      // Answers link the dev server's UI; an engine of the operator's only the UI it names.
      TWS_TEMPORAL_UI_URL: process.env.TWS_TEMPORAL_UI_URL || (temporalServer ? `http://127.0.0.1:${uiPort}` : ''),
      // Agents run as other uids: what their sandbox binds must be where they can reach it.
      ...(process.env.TWS_AGENT_ROOT || config.agentSandbox === 'none'
        ? {}
        : await agentRootOutside(config.dataDir).then((root) => (root ? { TWS_AGENT_ROOT: root } : {}))),
    };
    const log = (serviceLog = await openServiceLog(config.dataDir));
    for (const [name, entry] of [
      ['worker', 'worker/main.ts'],
      ['gateway', 'client/gateway/main.ts'],
    ] as const) {
      await parts.run(name, 'services', () =>
        spawnPart(process.execPath, serviceArgs(root, entry), {
          cwd: root,
          env: { ...env, TWS_SDK_METRICS_ADDRESS: socketAddressOf(sdkMetrics[name]) },
          stdio: ['ignore', log.fd, log.fd],
        }),
      );
    }
    await waitUntilReady(apiUrl, () => parts.startupDeath);
    if (parts.startupDeath) throw new Error(parts.startupDeath);
    parts.farewell = () => agentsLeftLine(apiUrl, config.operatorToken ?? secrets.operatorToken, config.hostId);
    parts.up = true;
    await parts.recordApi(config.dataDir, apiUrl);
  } catch (err) {
    if (parts.stopping) return; // a signal ended the start-up
    console.error(await failureLine(parts.startupDeath ?? errorLine(err), serviceLog));
    await parts.stopAll(1);
    return;
  }

  console.log(`
task-workspaces is running
  Console:      ${apiUrl}/  (sign in with a token below: userToken, or operatorToken for the operator pages)
  API:          ${apiUrl}  (OpenAPI at /openapi.json)
  Temporal UI:  ${temporalServer ? `http://127.0.0.1:${uiPort}${engineGuarded ? '  (any user name; the password is the operator token)' : ''}` : `(your Temporal at ${temporalAddress})`}
  Temporal:     ${engineGuarded ? `${temporalAddress}, mutual TLS only: the client certificate and key in ${path.join(config.dataDir, 'engine-tls')}` : temporalAddress}
  API tokens:   ${config.userToken ? 'from TWS_USER_TOKEN / TWS_OPERATOR_TOKEN' : `${secretsFile} (userToken, operatorToken; mode 0600)`}
  Data:         ${config.dataDir}
  Logs:         ${serviceLog!.file} (the worker's and the gateway's; the previous start's in services.log.1)
  SDK metrics:  worker ${localApiUrl(sdkMetrics.worker.host, sdkMetrics.worker.port)}/metrics (Prometheus; the gateway's own are in the API's /metrics)
  Pids:         launcher ${process.pid}, ${[...parts.running].map(([name, part]) => `${name} ${part.pid}`).join(', ')} (${pidsFile}, kept current)
A part that dies is started again. Ctrl-C stops the services; agents keep running (it says how many).`);
}

/** A start that cannot go on: one line, exit code 1 (make then adds its own). */
function startupFailed(line: string): never {
  console.error(`start-up failed: ${line}`);
  process.exit(1);
}

main().catch((err) => startupFailed(errorLine(err)));

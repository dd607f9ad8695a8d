/** Entry point of the worker process. */
import { closeSshConnections } from '../ssh/connection';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { serviceSdkLogger } from './sdk-logger';
import { sdkTelemetry } from './sdk-telemetry';
import pino, { type Logger } from 'pino';
import { recoverAgents } from '../executors/registry';
import { agentLimitsLayout } from '../executors/host/agent-limits';
import { agentIsolation, agentNetwork } from '../executors/host/agent-sandbox';
import { databaseAtStart, StartupRefusal } from '../db/database-failure';
import { createPool } from '../db/pool';
import { loadConfig } from '../domain/config';
import { outageOf } from '../domain/outage';
import { prepareWorkspaceRoot } from './workspace-root';
import { ensureHostSchedules } from './schedules';
import { prebuiltWorkflowBundle, startWorker } from './worker';
import { spanExportFailures } from './span-export-failures';
import { startTracing } from './tracing';
import { engineFailureLine } from './engine-failure';
import { adoptEngineProfile, engineConnectOptions } from './engine-connection';

async function main(): Promise<void> {
  adoptEngineProfile();
  const logger = pino({ name: 'worker' });
  Runtime.install({ logger: serviceSdkLogger(), telemetryOptions: sdkTelemetry(process.env) });
  const config = await prepareWorkspaceRoot(
    loadConfig(process.env, { cwd: process.cwd(), hostname: os.hostname(), cpus: os.availableParallelism() }),
  );
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required (the launcher sets it)');
  // Null (and nothing of OpenTelemetry's SDK loaded) unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
  // Enough for every activity slot to hold a transaction or a repository lock at once.
  const pool = createPool(config.databaseUrl, 60);
  // A database that refuses this worker stops it in one line; one that is away is waited for.
  await databaseAtStart(
    () => pool.query('SELECT 1'),
    config.databaseUrl,
    (line) => logger.warn(`${line}: the worker starts, and works once it answers`),
  );
  const tracing = await startTracing(
    'tws-worker',
    config.hostId,
    process.env,
    spanExportFailures('tws-worker', { pool, logger }),
  );
  // The trust boundary, said at start (and in /readyz as agentIsolation): see docs/security.md.
  const isolation = await agentIsolation(config.agentSandbox);
  if (isolation === 'none')
    logger.warn(
      { agentIsolation: isolation },
      "TWS_AGENT_SANDBOX=none: agents run as this service's OS user with an allow-listed environment and no sandbox: they can read and write what this user can",
    );
  else
    logger.info(
      { agentIsolation: isolation },
      "agents run in bubblewrap as their workspace's own unprivileged uid with no capability: the system read-only, their workspace writable, the service's folders hidden and closed, a private /proc",
    );
  // Refuses to start where agents' limits cannot be enforced, unless TWS_AGENT_LIMITS=off.
  if (!(await agentLimitsLayout(config.limits)))
    logger.warn({ agentLimits: 'off' }, 'TWS_AGENT_LIMITS=off: agents run without a memory, process or CPU limit');
  // Refuses to start when TWS_AGENT_SANDBOX=bwrap asks for egress this host cannot give.
  const network = await agentNetwork(config.agentSandbox, config.agentNetwork);
  if (network.policy === 'host')
    logger.warn(
      { agentNetwork: network.policy },
      "agents share this host's network: the service's ports on loopback (Temporal, PostgreSQL, the API) are in their reach",
    );
  else
    logger.info(
      { agentNetwork: network.policy },
      "agents have a network namespace of their own: no port of this host's loopback is in their reach",
    );
  // Not a condition of polling: with the database gone the worker still starts (its activities
  // fail into Temporal's retries) and re-identifies its agents once the database answers.
  const agentDeps = { pool, config, logger };
  const stopped = new AbortController();
  const reconciled = untilAnswered(() => recoverAgents(agentDeps, config.hostId), logger, stopped.signal).then(
    (agents) => {
      if (agents) logger.info(agents, 'agent processes re-identified after start');
    },
  );
  // Agents that end while no process of theirs watches (started by a gateway or a worker that is
  // gone): their outcome is collected within this period.
  let checking = false;
  const exitCheck = setInterval(() => {
    if (checking) return;
    checking = true;
    recoverAgents(agentDeps, config.hostId)
      .catch((err) => (outageOf(err) ? undefined : logger.warn({ err }, 'collecting agent exits failed')))
      .finally(() => (checking = false));
  }, config.exitCheckEveryMs);
  // An engine that refuses this worker is said at once by the SDK's own (native) connection; the
  // schedules' client would wait out its 10 s connect timeout first.
  await (await NativeConnection.connect(engineConnectOptions(config.temporalAddress))).close();
  // This host's sweep, consistency check and idle release, set up by the worker that runs them
  // before its host is registered (a host started any way has them).
  await ensureHostSchedules(config);
  const worker = await startWorker({ config, pool, logger, workflowBundle: prebuiltWorkflowBundle(), tracing });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      logger.info({ signal }, 'worker stopping');
      void worker.shutdown();
    });
  }
  await worker.done;
  clearInterval(exitCheck);
  await closeSshConnections();
  stopped.abort();
  await reconciled;
  await pool.end();
  await tracing?.shutdown();
}

/** Runs `step` until it succeeds, waiting 1 s, 2 s, … up to 30 s between tries; gives up only when the worker stops. */
async function untilAnswered<T>(step: () => Promise<T>, logger: Logger, stopped: AbortSignal): Promise<T | undefined> {
  for (let attempt = 0; !stopped.aborted; attempt++) {
    try {
      return await step();
    } catch (err) {
      const waitMs = Math.min(1000 * 2 ** attempt, 30_000);
      if (outageOf(err) === 'database') logger.warn({ waitMs }, 'database unavailable; reconciling agents later');
      else logger.error({ err, waitMs }, 'reconciling agents failed; retrying');
      await sleep(waitMs, undefined, { signal: stopped }).catch(() => {});
    }
  }
  return undefined;
}

// An engine that does not take this client is said in one line; anything else keeps its stack.
main().catch(async (err) => {
  const engine = err instanceof StartupRefusal ? null : await engineFailureLine(err).catch(() => null);
  console.error(err instanceof StartupRefusal ? `worker: ${err.message}` : engine ? `worker: ${engine}` : err);
  process.exit(1);
});

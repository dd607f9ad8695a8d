/**
 * Entry point of the API gateway process. Where it runs launches (TWS_GATEWAY_RUNS_LAUNCHES, the
 * default), its Temporal client shares one connection with a worker on this host's queue, so a
 * launch or resume it starts comes back in the start call's answer (eager workflow start).
 */
import { adoptEngineProfile, engineConnectOptions } from '../../worker/engine-connection';
import { engineFailureLine } from '../../worker/engine-failure';
import { closeSshConnections } from '../../ssh/connection';
import os from 'node:os';
import v8 from 'node:v8';
import { Client } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { serviceSdkLogger } from '../../worker/sdk-logger';
import { sdkTelemetry } from '../../worker/sdk-telemetry';
import pino from 'pino';
import { databaseAtStart, StartupRefusal } from '../../db/database-failure';
import { createPool } from '../../db/pool';
import { loadConfig, type Config } from '../../domain/config';
import { prebuiltWorkflowBundle, startLaunchWorker, type WorkerHandle } from '../../worker/worker';
import { prepareWorkspaceRoot } from '../../worker/workspace-root';
import { agentHostNeeds, statedAgentBoundary } from '../../domain/agent-host-needs';
import { spanExportFailures } from '../../worker/span-export-failures';
import { startTracing } from '../../worker/tracing';
import { buildGateway } from './app';
import { agentLimitsLayout } from '../../executors/host/agent-limits';
import { agentIsolation, agentNetwork } from '../../executors/host/agent-sandbox';

/** TWS_MEMORY_LOG=<ms> (diagnostic): logs the process's memory split every <ms> to stderr. */
function logMemory(): void {
  const every = Number(process.env.TWS_MEMORY_LOG || 0);
  if (!every) return;
  const mb = (n: number) => Math.round(n / 1048576);
  setInterval(() => {
    const m = process.memoryUsage();
    const spaces = v8
      .getHeapSpaceStatistics()
      .map((s) => `${s.space_name.replace('_space', '')}=${mb(s.space_size)}`)
      .join(' ');
    console.error(
      `memory rss=${mb(m.rss)} heapTotal=${mb(m.heapTotal)} heapUsed=${mb(m.heapUsed)} external=${mb(m.external)} arrayBuffers=${mb(m.arrayBuffers)} ${spaces}`,
    );
  }, every).unref();
}

async function main(): Promise<void> {
  logMemory();
  adoptEngineProfile();
  const logger = pino({ name: 'gateway' });
  Runtime.install({ logger: serviceSdkLogger(), telemetryOptions: sdkTelemetry(process.env) });
  const loaded = loadConfig(process.env, {
    cwd: process.cwd(),
    hostname: os.hostname(),
    cpus: os.availableParallelism(),
  });
  // Running launches, it makes worktrees and logs here, as the worker does.
  const config = loaded.gatewayRunsLaunches ? await prepareWorkspaceRoot(loaded) : loaded;
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required (the launcher sets it)');
  if (!config.userToken || !config.operatorToken)
    throw new Error('TWS_USER_TOKEN and TWS_OPERATOR_TOKEN are required (the launcher sets them)');
  // Null (and nothing of OpenTelemetry's SDK loaded) unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
  // Launch steps hold a transaction or a repository lock each: room for every local-activity slot.
  const pool = createPool(config.databaseUrl, config.gatewayRunsLaunches ? 40 : 20);
  // A database that refuses this gateway stops it in one line; one that is away is answered 503 for.
  await databaseAtStart(
    () => pool.query('SELECT 1'),
    config.databaseUrl,
    (line) => logger.warn(`${line}: the gateway starts, and answers 503 until it does`),
  );
  const tracing = await startTracing(
    'tws-gateway',
    config.hostId,
    process.env,
    spanExportFailures('tws-gateway', { pool, logger }),
  );
  const connection = await NativeConnection.connect(engineConnectOptions(config.temporalAddress));
  const temporal = new Client({ connection, namespace: config.temporalNamespace, interceptors: tracing?.client });
  let launches: WorkerHandle | null = null;
  if (config.gatewayRunsLaunches) {
    launches = await startLaunchWorker({
      config,
      pool,
      logger,
      connection,
      workflowBundle: prebuiltWorkflowBundle(),
      tracing,
    });
  }
  // Where it runs launches it starts agents too (eager launches): without their sandbox or their
  // limits it refuses, as the worker does. Where it runs none it asks nothing of this machine.
  const boundary = agentHostNeeds(config, 'gateway').startsAgents
    ? await agentBoundaryHere(config)
    : statedAgentBoundary(config);
  const app = await buildGateway({
    ...boundary,
    config,
    pool,
    temporal,
    logger,
    tokens: { user: config.userToken, operator: config.operatorToken },
    metricsPublic: process.env.TWS_METRICS_PUBLIC === '1',
    traceRequests: tracing !== null,
  });
  await app.listen({ host: config.apiHost, port: config.apiPort });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void app.close().then(async () => {
        // Launches in flight finish first: their HTTP requests are answered by then.
        await launches?.shutdown();
        await closeSshConnections();
        await pool.end();
        await connection.close();
        await tracing?.shutdown();
        process.exit(0);
      });
    });
  }
}

/** The agents' boundary on this machine, probed: refuses, in one line, where the sandbox or the limits cannot be had. */
async function agentBoundaryHere(config: Config) {
  await agentLimitsLayout(config.limits);
  return {
    agentIsolation: await agentIsolation(config.agentSandbox),
    agentNetwork: (await agentNetwork(config.agentSandbox, config.agentNetwork)).policy,
  };
}

// An engine that does not take this client is said in one line; anything else keeps its stack.
main().catch(async (err) => {
  const engine = err instanceof StartupRefusal ? null : await engineFailureLine(err).catch(() => null);
  console.error(err instanceof StartupRefusal ? `gateway: ${err.message}` : engine ? `gateway: ${engine}` : err);
  process.exit(1);
});

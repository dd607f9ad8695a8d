/**
 * The worker: workflows and database activities on the shared queue; on this host's queue
 * (`<queue>-host-<hostId>`) the launch and resume workflows with all their steps, and the file and
 * process activities other workflows send here.
 */
import { engineConnectOptions } from './engine-connection';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import { createHostActivities, createRecordActivities } from '../activities';
import type { Config } from '../domain/config';
import { hostTaskQueue } from '../domain/workflow-ids';
import { wakeCleanupsWaitingOn } from './host-return';
import { startDiskMeasurement } from './disk-measurement';
import { startLimitChecks } from './limit-checks';
import { startDiskGuard } from './disk-guard';
import { startHostRegistration } from './host-registration';
import { WORKFLOW_SPANS_DROPPED, type Tracing } from './tracing';
import { workersSharingOneWorkflowThread } from './one-workflow-thread';

export interface WorkerHandle {
  /** Resolves when both workers stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

/** The one workflow bundle, tracing on or off: its tracing interceptors wake only in a traced run (workflows/tracing-interceptors.ts). */
export async function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    // Paths the bundler resolves (.ts from the sources, .js from .build), not require.resolve's.
    workflowsPath: path.join(__dirname, '../workflows'),
    workflowInterceptorModules: [path.join(__dirname, '../workflows/tracing-interceptors')],
    logger: quietBundlerLogger,
  });
}

const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

type Bundle = WorkflowBundleWithSourceMap | { codePath: string };

/** The bundle the launcher made ahead (TWS_WORKFLOW_BUNDLE), which keeps webpack out of a long-running process; undefined bundles here. */
export function prebuiltWorkflowBundle(): Bundle | undefined {
  const file = process.env.TWS_WORKFLOW_BUNDLE;
  return file && existsSync(file) ? { codePath: file } : undefined;
}

interface WorkerDeps {
  config: Config;
  pool: pg.Pool;
  logger: Logger;
  /** This process's tracing (worker/tracing.ts); null or absent when off. */
  tracing?: Tracing | null;
}

/** What tracing adds to a worker: its interceptors when on; the workflow-span sink always (a no-op when off). */
function tracingOptions(tracing: Tracing | null | undefined) {
  return {
    interceptors: tracing?.worker,
    sinks: { exporter: tracing?.workflowSpans ?? WORKFLOW_SPANS_DROPPED },
  };
}

/**
 * This host's queue (`<queue>-host-<hostId>`): launches and resumes, every step a local activity.
 * `launchesOnly` is the gateway's worker: it takes the launches its gateway starts eagerly and
 * polls no activity tasks, so cleanups and other workflows' host steps stay in the worker process.
 */
function hostQueueWorker(
  connection: NativeConnection,
  deps: WorkerDeps,
  workflowBundle: Bundle,
  launchesOnly: boolean,
  WorkerClass: typeof Worker = Worker,
): Promise<Worker> {
  return WorkerClass.create({
    connection,
    namespace: deps.config.temporalNamespace,
    taskQueue: hostTaskQueue(deps.config.taskQueue, deps.config.hostId),
    workflowBundle,
    ...tracingOptions(deps.tracing),
    activities: { ...createRecordActivities(deps), ...createHostActivities(deps) },
    enableNonLocalActivities: !launchesOnly,
    // Git work is serialized per repository anyway; waiting slots would only hold memory.
    maxConcurrentActivityTaskExecutions: 20,
    maxConcurrentLocalActivityExecutions: 20,
    // Also what leaves eager starts a free slot: with 8 here, the SDK's pollers held them all and
    // no launch started eagerly (measured; 16 does).
    maxConcurrentWorkflowTaskExecutions: 16,
    // Launches and resumes last seconds.
    maxCachedWorkflows: 50,
  });
}

function handleOf(
  workers: Worker[],
  connection: NativeConnection,
  ownsConnection: boolean,
  onDone: () => Promise<void> = async () => {},
): WorkerHandle {
  const done = Promise.all(workers.map((w) => w.run())).then(async () => {
    await onDone();
    if (ownsConnection) await connection.close();
  });
  return {
    done,
    async shutdown() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await done;
    },
  };
}

export async function startWorker(
  opts: WorkerDeps & { connection?: NativeConnection; workflowBundle?: Bundle },
): Promise<WorkerHandle> {
  const { config, pool, logger } = opts;
  const ownsConnection = !opts.connection;
  const connection = opts.connection ?? (await NativeConnection.connect(engineConnectOptions(config.temporalAddress)));
  const deps = { pool, config, logger };
  const workflowBundle = opts.workflowBundle ?? (await bundleWorkflows());

  // Both Workers run their workflows in one workflow thread (worker/one-workflow-thread.ts): the
  // host's first, since the thread takes the activity names of the first (its are a superset).
  const OneThread = workersSharingOneWorkflowThread();
  // Launches and resumes run on this host's queue, their steps as local activities here; other
  // workflows reach this host's steps as ordinary activities on the same queue.
  const host = await hostQueueWorker(connection, { ...deps, tracing: opts.tracing }, workflowBundle, false, OneThread);
  const shared = await OneThread.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    workflowBundle,
    ...tracingOptions(opts.tracing),
    activities: createRecordActivities(deps),
    // Sized for 2 cores: more slots only queue work inside the process and hold its memory.
    maxConcurrentLocalActivityExecutions: 32,
    maxConcurrentWorkflowTaskExecutions: 16,
    // Launches and cleanups are short: a small sticky cache keeps memory flat under bursts.
    maxCachedWorkflows: 100,
  });
  // Registered once it can poll its host's queue: a live record means work placed here is taken.
  const registration = await startHostRegistration(pool, config, logger);
  // Its workspaces and its filesystem measured in the background, into the host's record.
  const disk = startDiskMeasurement(deps);
  // What the tasks whose agents run use, and their workspaces against their disk quota.
  const quotas = startLimitChecks(deps);
  // Its agents stopped before its workspace root's filesystem falls under the minimum free space.
  const guard = startDiskGuard(deps);
  // Back: the cleanups that wait for this host run now.
  await wakeCleanupsWaitingOn(pool, connection, config.temporalNamespace, config.hostId, logger);
  logger.info({ taskQueue: config.taskQueue, hostId: config.hostId }, 'worker running');
  return handleOf([shared, host], connection, ownsConnection, async () => {
    await Promise.all([registration.stop(), disk.stop(), quotas.stop(), guard.stop()]);
  });
}

/**
 * The gateway's own worker on its host's queue, on the connection its Temporal client uses: a
 * launch or resume the gateway starts with eager start comes back in the start call's answer and
 * runs here at once, without waiting for a worker to poll it (see docs/architecture.md, *Where a launch
 * runs*). Only on the machine that holds the workspaces: its agents are this host's processes.
 */
export async function startLaunchWorker(
  opts: WorkerDeps & { connection: NativeConnection; workflowBundle?: Bundle },
): Promise<WorkerHandle> {
  const { config, pool, logger, tracing } = opts;
  const launches = await hostQueueWorker(
    opts.connection,
    { config, pool, logger, tracing },
    opts.workflowBundle ?? (await bundleWorkflows()),
    true,
  );
  logger.info({ hostId: config.hostId }, 'gateway runs launches');
  return handleOf([launches], opts.connection, false);
}

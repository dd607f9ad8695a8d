/**
 * The worker: workflows and database activities on the shared queue; on this host's queue
 * (`<queue>-host-<hostId>`) the launch and resume workflows with all their steps, and the file and
 * process activities other workflows send here.
 */
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import { createHostActivities, createRecordActivities } from '../activities';
import type { Config } from '../domain/config';
import { hostTaskQueue } from '../domain/workflow-ids';

export interface WorkerHandle {
  /** Resolves when both workers stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

export async function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

export async function startWorker(opts: {
  config: Config;
  pool: pg.Pool;
  logger: Logger;
  connection?: NativeConnection;
  workflowBundle?: WorkflowBundleWithSourceMap | { codePath: string };
}): Promise<WorkerHandle> {
  const { config, pool, logger } = opts;
  const ownsConnection = !opts.connection;
  const connection = opts.connection ?? (await NativeConnection.connect({ address: config.temporalAddress }));
  const deps = { pool, config, logger };
  const workflowBundle = opts.workflowBundle ?? (await bundleWorkflows());

  const shared = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    workflowBundle,
    activities: createRecordActivities(deps),
    // Sized for 2 cores: more slots only queue work inside the process and hold its memory.
    maxConcurrentLocalActivityExecutions: 32,
    maxConcurrentWorkflowTaskExecutions: 16,
    // Launches and cleanups are short: a small sticky cache keeps memory flat under bursts.
    maxCachedWorkflows: 100,
  });
  // Launches and resumes run on this host's queue, their steps as local activities here; other
  // workflows reach this host's steps as ordinary activities on the same queue.
  const host = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: hostTaskQueue(config.taskQueue, config.hostId),
    workflowBundle,
    activities: { ...createRecordActivities(deps), ...createHostActivities(deps) },
    // Git work is serialized per repository anyway; waiting slots would only hold memory.
    maxConcurrentActivityTaskExecutions: 20,
    maxConcurrentLocalActivityExecutions: 20,
    maxConcurrentWorkflowTaskExecutions: 16,
    // Launches and resumes last seconds.
    maxCachedWorkflows: 50,
  });

  const done = Promise.all([shared.run(), host.run()]).then(async () => {
    if (ownsConnection) await connection.close();
  });
  logger.info({ taskQueue: config.taskQueue, hostId: config.hostId }, 'worker running');
  return {
    done,
    async shutdown() {
      if (shared.getState() === 'RUNNING') shared.shutdown();
      if (host.getState() === 'RUNNING') host.shutdown();
      await done;
    },
  };
}

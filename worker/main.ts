/** Entry point of the worker process. */
import os from 'node:os';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { reconcileExecutions } from '../activities/process-reconcile';
import { createPool } from '../db/pool';
import { loadConfig } from '../domain/config';
import { prepareWorkspaceRoot } from './workspace-root';
import { prebuiltWorkflowBundle, startWorker } from './worker';

async function main(): Promise<void> {
  const logger = pino({ name: 'worker' });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = await prepareWorkspaceRoot(loadConfig(process.env, { cwd: process.cwd(), hostname: os.hostname() }));
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required (the launcher sets it)');
  // Enough for every activity slot to hold a transaction or a repository lock at once.
  const pool = createPool(config.databaseUrl, 60);
  const agents = await reconcileExecutions(pool, config.hostId);
  logger.info(agents, 'agent processes re-identified after start');
  const worker = await startWorker({ config, pool, logger, workflowBundle: prebuiltWorkflowBundle() });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      logger.info({ signal }, 'worker stopping');
      void worker.shutdown();
    });
  }
  await worker.done;
  await pool.end();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

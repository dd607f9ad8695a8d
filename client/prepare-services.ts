/**
 * What must hold before workers and gateways start: Temporal answers, search attributes exist,
 * migrations ran. The schedules are each worker's own (worker/schedules.ts).
 */
import { Connection } from '@temporalio/client';
import { migrate } from '../db/migrate';
import { connectClient, ensureSearchAttributes } from './temporal';
import { engineConnectOptions } from '../worker/engine-connection';

async function waitForTemporal(
  address: string,
  isDead: () => boolean = () => false,
  timeoutMs = 60_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const options = engineConnectOptions(address, env);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (isDead()) throw new Error('the Temporal server exited during start-up');
    try {
      const connection = await Connection.connect({ ...options, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

/** `engineEnv`: the credentials the services will connect with (the launcher's, for its own engine). */
export async function prepareServices(opts: {
  databaseUrl: string;
  temporalAddress: string;
  namespace: string;
  isTemporalDead?: () => boolean;
  engineEnv?: NodeJS.ProcessEnv;
}): Promise<void> {
  await waitForTemporal(opts.temporalAddress, opts.isTemporalDead, undefined, opts.engineEnv);
  const client = await connectClient(opts.temporalAddress, opts.namespace, opts.engineEnv);
  try {
    await ensureSearchAttributes(client, opts.namespace);
  } finally {
    await client.connection.close();
  }
  await migrate(opts.databaseUrl);
}

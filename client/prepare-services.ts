/**
 * What must hold before workers and gateways start: Temporal answers, search attributes exist,
 * migrations ran. The schedules are each worker's own (worker/schedules.ts).
 */
import { Connection } from '@temporalio/client';
import { migrate } from '../db/migrate';
import { connectClient, ensureSearchAttributes } from './temporal';
import { engineConnectOptions } from '../worker/engine-connection';
import { engineFailureLine } from '../worker/engine-failure';
import { errorLine } from './supervisor';

/**
 * What the diagnosis says of an engine that is not up yet (the bundled dev server still
 * starting): worth waiting for. Anything else (a certificate, a key, a CA, a file) is a refusal
 * that waiting does not mend.
 */
const NOT_YET_UP =
  /^cannot reach the Temporal engine at \S+: (nothing listens there|it does not answer( \(| a call)|it closed the connection:|the namespace \S+ does not exist|there is no route to it)/;

/**
 * Waits for the engine to answer. A refusal ends the wait at once with the one line that names
 * it (worker/engine-failure.ts, as the worker and the gateway print it); an engine that is not
 * there yet is waited for, and named the same way when the wait runs out.
 */
async function waitForTemporal(
  address: string,
  isDead: () => boolean = () => false,
  timeoutMs = 60_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const diagnose = (err: unknown) => engineFailureLine(err, { ...env, TEMPORAL_ADDRESS: address }).catch(() => null);
  let options: ReturnType<typeof engineConnectOptions>;
  try {
    options = engineConnectOptions(address, env);
  } catch (err) {
    throw new Error((await diagnose(err)) ?? errorLine(err));
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (isDead()) throw new Error('the Temporal server exited during start-up');
    try {
      const connection = await Connection.connect({ ...options, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      return;
    } catch (err) {
      const line = await diagnose(err);
      if (line && !NOT_YET_UP.test(line)) throw new Error(line);
      if (Date.now() > deadline) throw new Error(line ?? errorLine(err));
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

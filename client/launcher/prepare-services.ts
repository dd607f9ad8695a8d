/**
 * What must hold before workers and gateways start: Temporal answers, search attributes exist,
 * migrations ran. The schedules are each worker's own (worker/schedules.ts).
 */
import { Connection } from '@temporalio/client';
import { databaseFailure } from '../../db/database-failure';
import { migrate } from '../../db/migrate';
import { connectClient, ensureSearchAttributes } from './temporal';
import { engineConnectOptions } from '../../worker/engine-connection';
import { engineFailure } from '../../worker/engine-failure';
import { errorLine } from './supervisor';

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
  const diagnose = (err: unknown) => engineFailure(err, { ...env, TEMPORAL_ADDRESS: address }).catch(() => null);
  let options: ReturnType<typeof engineConnectOptions>;
  try {
    options = engineConnectOptions(address, env);
  } catch (err) {
    throw new Error((await diagnose(err))?.line ?? errorLine(err));
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
      const failure = await diagnose(err);
      if (failure && !failure.notUpYet) throw new Error(failure.line);
      if (Date.now() > deadline) throw new Error(failure?.line ?? errorLine(err));
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

/**
 * The engine's first call on the namespace: one that is not there is waited for a while (an engine
 * still making it), then named in one line, as the worker and the gateway name it; any other
 * refusal at once, the same way. An error the engine's diagnosis does not explain is thrown as it is.
 */
async function onNamespace(call: () => Promise<void>, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const failure = await engineFailure(err, env).catch(() => null);
      if (!failure) throw err;
      if (!failure.notUpYet || Date.now() > deadline) throw new Error(failure.line);
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

/**
 * `engineEnv`: the credentials the services will connect with (the launcher's, for its own engine).
 * `namespaceWaitMs`: how long a namespace that is not there is waited for (15 s).
 */
export async function prepareServices(opts: {
  databaseUrl: string;
  temporalAddress: string;
  namespace: string;
  isTemporalDead?: () => boolean;
  engineEnv?: NodeJS.ProcessEnv;
  namespaceWaitMs?: number;
}): Promise<void> {
  await waitForTemporal(opts.temporalAddress, opts.isTemporalDead, undefined, opts.engineEnv);
  const client = await connectClient(opts.temporalAddress, opts.namespace, opts.engineEnv);
  const env = {
    ...(opts.engineEnv ?? process.env),
    TEMPORAL_ADDRESS: opts.temporalAddress,
    TEMPORAL_NAMESPACE: opts.namespace,
  };
  try {
    await onNamespace(() => ensureSearchAttributes(client, opts.namespace), env, opts.namespaceWaitMs ?? 15_000);
  } finally {
    await client.connection.close();
  }
  await migrate(opts.databaseUrl).catch((err: unknown) => {
    // One line naming PostgreSQL and DATABASE_URL (never its password or a file's path).
    const failure = databaseFailure(err, opts.databaseUrl);
    throw failure ? new Error(failure.line) : err;
  });
}

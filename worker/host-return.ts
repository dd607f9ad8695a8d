/**
 * A host that comes back finishes its waiting cleanups at once: when this worker has
 * registered its host, every cleanup job waiting in its retry schedule because a host of its was
 * down (`host_unavailable`) and whose snapshot names this host is signalled (hostBackSignal); the
 * job's workflow checks it is one of its hosts and runs its next attempt now. The retry schedule
 * stays the bound for hosts that stay down.
 */
import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Db } from '../db/pool';
import { HOST_BACK_SIGNAL } from '../domain/cleanup';

/** Jobs waiting on a down host whose snapshot names this host (the attempt's hosts: domain/cleanup-snapshot.ts cleanupHosts). */
async function jobsWaitingOn(db: Db, hostId: string): Promise<string[]> {
  const res = await db.query<{ workflow_id: string }>(
    `SELECT workflow_id FROM cleanup_jobs
      WHERE state = 'retry_wait' AND last_error = 'host_unavailable'
        AND (snapshot->>'hostId' = $1
          OR snapshot->'processes' @> jsonb_build_array(jsonb_build_object('hostId', $1::text))
          OR snapshot->'spawnIntents' @> jsonb_build_array(jsonb_build_object('hostId', $1::text))
          OR snapshot->'borrowed' @> jsonb_build_array(jsonb_build_object('hostId', $1::text)))`,
    [hostId],
  );
  return res.rows.map((r) => r.workflow_id);
}

export async function wakeCleanupsWaitingOn(
  db: Db,
  connection: NativeConnection,
  namespace: string,
  hostId: string,
  logger: Logger,
): Promise<number> {
  let jobs: string[];
  try {
    jobs = await jobsWaitingOn(db, hostId);
  } catch (err) {
    // The database does not answer yet: the retry schedule runs them.
    logger.warn({ err, hostId }, 'cleanups waiting on this host not looked up; their retry schedule runs them');
    return 0;
  }
  if (jobs.length === 0) return 0;
  const client = new Client({ connection, namespace });
  let woken = 0;
  for (const workflowId of jobs) {
    // A run that ended meanwhile, or one that is not reachable now: its schedule stands.
    await client.workflow
      .getHandle(workflowId)
      .signal(HOST_BACK_SIGNAL, hostId)
      .then(() => woken++)
      .catch((err: unknown) => logger.debug({ err, workflowId }, 'a waiting cleanup was not woken'));
  }
  logger.info({ hostId, woken }, 'cleanups waiting on this host run now');
  return woken;
}

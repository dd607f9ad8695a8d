/**
 * The Temporal Schedules: quick-chat expiry (default every 24 h), the orphan sweep (default every
 * 3 h), the consistency check, and idle release (per host, default every hour; none when it is
 * off). Idempotent. Set up by each host's worker when it starts (worker/main.ts), so a host
 * started any way (make start, scripts/second-host.sh, a container) has its own.
 */
import {
  Client,
  Connection,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
} from '@temporalio/client';
import type { Config } from '../domain/config';
import { TriggerAttr } from '../domain/search-attributes';
import {
  IDLE_RELEASE_SCHEDULE_ID,
  ORPHAN_SWEEP_SCHEDULE_ID,
  QUICK_CHAT_EXPIRY_SCHEDULE_ID,
  RECONCILE_SCHEDULE_ID,
} from '../domain/workflow-ids';
import { engineConnectOptions } from './engine-connection';

/** This host's schedules, on a client of its own for the call (the worker's connection is a native one). */
export async function ensureHostSchedules(config: Config): Promise<void> {
  const connection = await Connection.connect(engineConnectOptions(config.temporalAddress));
  try {
    await ensureSchedules(new Client({ connection, namespace: config.temporalNamespace }), config);
  } finally {
    await connection.close();
  }
}

export async function ensureSchedules(
  client: Client,
  config: Config,
  idSuffix = '',
): Promise<{ quickChatExpiry: string; orphanSweep: string; reconcile: string; idleRelease: string }> {
  const ids = {
    quickChatExpiry: QUICK_CHAT_EXPIRY_SCHEDULE_ID + idSuffix,
    orphanSweep: `${ORPHAN_SWEEP_SCHEDULE_ID}-${config.hostId}${idSuffix}`,
    reconcile: `${RECONCILE_SCHEDULE_ID}-${config.hostId}${idSuffix}`,
    idleRelease: `${IDLE_RELEASE_SCHEDULE_ID}-${config.hostId}${idSuffix}`,
  };
  const schedules = [
    {
      scheduleId: ids.quickChatExpiry,
      every: config.quickChatExpiryEveryMs,
      // Tagged, so that its runs and the cleanups it starts carry the project's search attributes.
      action: {
        type: 'startWorkflow' as const,
        workflowType: 'expireQuickChats',
        taskQueue: config.taskQueue,
        args: [{ idleMs: config.quickChatIdleMs, policy: config.cleanupPolicy }],
        typedSearchAttributes: [{ key: TriggerAttr, value: 'quick_chat_expiry' }],
      },
    },
    {
      // One sweep per host: each host sweeps its own workspace root.
      scheduleId: ids.orphanSweep,
      every: config.orphanSweepEveryMs,
      action: {
        type: 'startWorkflow' as const,
        workflowType: 'orphanSweep',
        taskQueue: config.taskQueue,
        args: [{ hostId: config.hostId, graceMs: config.orphanGraceMs, dryRun: false }],
      },
    },
    {
      // One check per host: each host re-identifies its own agents and unrecorded starts.
      scheduleId: ids.reconcile,
      every: config.reconcileEveryMs,
      action: {
        type: 'startWorkflow' as const,
        workflowType: 'reconcileRecords',
        taskQueue: config.taskQueue,
        args: [{ hostId: config.hostId }],
      },
    },
    ...(config.idleReleaseAfterMs === null
      ? []
      : [
          {
            // One per host: each host releases the idle workspaces it holds.
            scheduleId: ids.idleRelease,
            every: config.idleReleaseEveryMs,
            action: {
              type: 'startWorkflow' as const,
              workflowType: 'releaseIdleWorkspaces',
              taskQueue: config.taskQueue,
              args: [
                {
                  hostId: config.hostId,
                  idleForMs: config.idleReleaseAfterMs,
                  dryRun: false,
                  policy: config.cleanupPolicy,
                },
              ],
              typedSearchAttributes: [{ key: TriggerAttr, value: 'idle_release' }],
            },
          },
        ]),
  ];
  // Turned off: a schedule an earlier start made goes (its runs already started finish).
  if (config.idleReleaseAfterMs === null)
    await client.schedule
      .getHandle(ids.idleRelease)
      .delete()
      .catch((err: unknown) => {
        if (!(err instanceof ScheduleNotFoundError)) throw err;
      });
  for (const s of schedules) {
    try {
      await client.schedule.create({
        scheduleId: s.scheduleId,
        spec: { intervals: [{ every: s.every }] },
        action: s.action,
        policies: { overlap: ScheduleOverlapPolicy.SKIP },
      });
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      // Configuration may have changed since it was created: bring it up to date.
      await client.schedule
        .getHandle(s.scheduleId)
        .update((previous) => ({ ...previous, spec: { intervals: [{ every: s.every }] }, action: s.action }));
    }
  }
  return ids;
}

/**
 * The host's free-space guard [R6.11]: every `diskGuardEveryMs` this worker reads the free space
 * of the filesystems its agents write to (its workspace root's, its agents' homes' beside their
 * logs, its own data's: one statfs each), and when one is about to fall under the minimum
 * (TWS_MIN_FREE_DISK plus the margin of domain/disk-guard.ts), or cannot be read, stops the agents
 * running on this host's disk at once: each is frozen (every process of its control group held),
 * then stopped through its executor with no grace, and what its stop left is killed. Their
 * executions end `stopped` with the outcome `disk_low`, their sessions `stopped`. The service's own
 * data, its database among them when it shares the filesystem, thus keeps the minimum free: the
 * per-task quota (worker/limit-checks.ts) is measured and slower; this bound is the host's.
 *
 * Every agent of the host is stopped, not only the one that writes: which one writes is not
 * known without walking every workspace, and by then the disk is full.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { runningHostAgents, type RunningHostAgent } from '../db/host-agents';
import { markOutcome } from '../db/executions';
import type { Config } from '../domain/config';
import { FALL_WINDOW_MS, guardMargin, hostDiskRunningOut, type FreeSpaceReading } from '../domain/disk-guard';
import { minFreeBytes, type FilesystemSpace } from '../domain/disk';
import { outageOf } from '../domain/outage';
import { signalAgentGroup } from '../executors/host/agent-freeze';
import { agentLimitsLayout, type CgroupLayout } from '../executors/host/agent-limits';
import { filesystemSpace } from '../executors/host/disk';
import { executorsOf } from '../executors/registry';

interface GuardDeps {
  pool: pg.Pool;
  config: Config;
  logger: Logger;
}

/** One agent frozen, stopped without grace, its leftovers killed, and its outcome said. */
async function stopForLowDisk(deps: GuardDeps, layout: CgroupLayout | null, agent: RunningHostAgent): Promise<void> {
  const owner = { environmentTaskId: agent.owner_task_id, executionId: agent.id };
  if (layout) await signalAgentGroup(layout, owner, 'SIGSTOP');
  // The executor's own stop (records, its commits brought home, its groups swept), with no grace:
  // a frozen agent has nothing to finish.
  const now = executorsOf({ ...deps, config: { ...deps.config, agentStopGraceMs: 0 } });
  const status = await now.at({ sshTargetId: null }).stopAgent(agent);
  if (layout) await signalAgentGroup(layout, owner, 'SIGKILL');
  if (status === 'stopped') await markOutcome(deps.pool, agent.id, 'disk_low');
}

/** Every running agent of the host's disk stopped; how many. */
async function stopAgents(
  deps: GuardDeps,
  folder: string,
  space: FilesystemSpace | null,
  marginBytes: number,
): Promise<number> {
  const { pool, config, logger } = deps;
  const agents = await runningHostAgents(pool, config.hostId);
  if (agents.length === 0) return 0;
  const layout = config.limits.enabled ? await agentLimitsLayout(config.limits).catch(() => null) : null;
  // All frozen first, then stopped side by side: none writes while another's stop runs.
  if (layout)
    await Promise.all(
      agents.map((a) => signalAgentGroup(layout, { environmentTaskId: a.owner_task_id, executionId: a.id }, 'SIGSTOP')),
    );
  const results = await Promise.allSettled(agents.map((a) => stopForLowDisk(deps, layout, a)));
  const failed = results.filter((r) => r.status === 'rejected').length;
  logger.warn(
    {
      hostId: config.hostId,
      folder,
      freeBytes: space?.freeBytes ?? null,
      minFreeBytes: space ? minFreeBytes(config.minFreeDisk, space.totalBytes) : null,
      marginBytes,
      stopped: agents.length - failed,
      failed,
    },
    space
      ? 'agents stopped: the free space of the filesystem they write to is about to fall under its minimum'
      : 'agents stopped: the free space of the filesystem they write to cannot be read',
  );
  return agents.length - failed;
}

/** Guards now and every interval after (one round at a time); `stop()` ends it once a round in flight ended. */
export function startDiskGuard(deps: GuardDeps): { stop(): Promise<void> } {
  const { config, logger } = deps;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> | null = null;

  // What agents write to: their workspaces, their homes (beside their logs), and the service's
  // own data (the database's, when embedded). Each filesystem among them is watched.
  const watched = [...new Set([config.workspaceRoot, config.logDir, config.dataDir])];
  const readings = new Map<string, FreeSpaceReading[]>(watched.map((folder) => [folder, []]));

  const round = async () => {
    for (const folder of watched) {
      const space = await filesystemSpace(folder).catch(() => null);
      const at = Date.now();
      const recent = [
        ...readings.get(folder)!.filter((r) => at - r.at <= FALL_WINDOW_MS),
        ...(space ? [{ at, freeBytes: space.freeBytes }] : []),
      ];
      readings.set(folder, recent);
      const margin = guardMargin(config.diskGuardMarginBytes, recent);
      if (!hostDiskRunningOut(space, config.minFreeDisk, margin)) continue;
      await stopAgents(deps, folder, space, margin);
      return;
    }
  };
  const next = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      inFlight = round()
        .catch((err: unknown) =>
          outageOf(err)
            ? logger.warn({ hostId: config.hostId }, 'database unavailable; free-space guard could not stop agents')
            : logger.error({ err, hostId: config.hostId }, 'free-space guard failed'),
        )
        .finally(() => {
          inFlight = null;
          next();
        });
    }, config.diskGuardEveryMs);
    timer.unref();
  };
  next();
  return {
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inFlight;
    },
  };
}

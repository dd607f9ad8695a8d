/**
 * What each task's agents use, and each task's workspace within its disk quota. Every
 * `diskQuotaCheckEveryMs` this worker reads the control group of each task whose agents run here
 * (memory and processes, recorded for the views and the metrics), and
 * measures the workspaces of its host whose agents run (through their executor, as the disk
 * measurement does), records the figure, and where a workspace is over its task's quota stops its
 * agents (their executions end `stopped` with the outcome `disk_quota`, their sessions `stopped`).
 * Admission then refuses launches and resumes in it (`task_disk_quota`, 507) until it is measured
 * under its quota, or its quota is raised. A measured bound: an agent can write past the quota
 * for up to one interval (a second by default) and one walk before it is stopped. A walk (`du`) is
 * not cheap, so a workspace is walked again only when the workspace root's free space fell by
 * more than the room its last walk left under its quota: it cannot have grown by more. The host's
 * own bound, whatever the quotas, is the free-space guard (worker/disk-guard.ts).
 */
import { readFile, stat } from 'node:fs/promises';
import type pg from 'pg';
import type { Logger } from 'pino';
import { environmentOverQuota, recordEnvironmentDisk, workspacesToMeasure } from '../db/disk';
import { findExecution, markOutcome } from '../db/executions';
import type { Config } from '../domain/config';
import { surelyWithinQuota } from '../domain/disk';
import { filesystemSpace } from '../executors/host/disk';
import { outageOf } from '../domain/outage';
import { pathExists } from '../executors/host/workspace-fs';
import { executorsOf } from '../executors/registry';
import { objectStoresListPath } from '../executors/host/exits';
import { agentLimitsLayout, sweepAgentGroups, taskUsage } from '../executors/host/agent-limits';
import { recordTaskUsage } from '../db/task-usage';
import { taskHomesOfRun } from '../executors/host/agent-home';

interface RunningAgent {
  id: string;
  /** Its run log on this host (null: on an SSH target): its home and its list of task object stores are beside it. */
  logPath: string | null;
}

/**
 * What a host agent writes besides its workspace, counted with it: its task's homes
 * and the task object stores its commits go to (listed beside its log when it started).
 */
async function writtenBesides(agent: RunningAgent): Promise<string[]> {
  if (!agent.logPath) return [];
  const home = taskHomesOfRun(agent.logPath);
  const stores = await readFile(objectStoresListPath(agent.logPath), 'utf8').then(
    (text) => {
      const listed: unknown = JSON.parse(text);
      return Array.isArray(listed) ? listed.filter((d): d is string => typeof d === 'string') : [];
    },
    () => [] as string[],
  );
  return [home, ...stores];
}

/** The running executions of this host's agents, by the environment their session works in, and those environments' owners. */
async function runningByEnvironment(
  pool: pg.Pool,
  hostId: string,
): Promise<{ byEnvironment: Map<string, RunningAgent[]>; owners: Set<string>; quotaOf: Map<string, number | null> }> {
  const res = await pool.query<{
    environment_id: string;
    owner: string;
    disk_quota_bytes: number | null;
    id: string;
    log_path: string;
    ssh_target_id: string | null;
  }>(
    `SELECT s.environment_id, e.task_id AS owner, t.disk_quota_bytes::float8 AS disk_quota_bytes, x.id, x.log_path, x.ssh_target_id
       FROM executions x JOIN sessions s ON s.id = x.session_id JOIN task_environments e ON e.id = s.environment_id
       JOIN tasks t ON t.id = e.task_id
      WHERE x.host_id = $1 AND x.status = 'running'`,
    [hostId],
  );
  const byEnvironment = new Map<string, RunningAgent[]>();
  const owners = new Set<string>();
  const quotaOf = new Map<string, number | null>();
  for (const row of res.rows) {
    quotaOf.set(row.environment_id, row.disk_quota_bytes);
    if (!row.ssh_target_id) owners.add(row.owner);
    const agent = { id: row.id, logPath: row.ssh_target_id ? null : row.log_path };
    byEnvironment.set(row.environment_id, [...(byEnvironment.get(row.environment_id) ?? []), agent]);
  }
  return { byEnvironment, owners, quotaOf };
}

/** The control group of each task whose agents run on this host, read and recorded (none: the host's rows go). */
async function recordUsage(pool: pg.Pool, config: Config, owners: Set<string>, sweep: boolean): Promise<void> {
  const layout = await agentLimitsLayout(config.limits).catch(() => null);
  // Groups no supervisor left (it was killed first), once a minute old and empty: now and then,
  // as it reads every group of the host.
  if (layout && sweep) await sweepAgentGroups(layout, { minAgeMs: 60_000 });
  const usage: { taskId: string; memoryBytes: number; pids: number }[] = [];
  if (layout)
    for (const taskId of owners) {
      const used = await taskUsage(layout, taskId);
      if (used) usage.push({ taskId, ...used });
    }
  await recordTaskUsage(pool, config.hostId, usage);
}

/** A running workspace's last walk: its bytes, the root's free space right before, and when. */
interface LastWalk {
  bytes: number;
  freeBefore: number;
  at: number;
}

/** Rounds after which a workspace is walked even when surely within its quota: its figure in the views stays as fresh as before (30 s by default). */
const WALK_AT_LEAST_EVERY = 30;

/** The workspace root's filesystem: its device and free bytes; null when unreadable (every workspace is then walked). */
async function rootFilesystem(workspaceRoot: string): Promise<{ dev: number; freeBytes: number } | null> {
  try {
    const [space, info] = await Promise.all([filesystemSpace(workspaceRoot), stat(workspaceRoot)]);
    return { dev: info.dev, freeBytes: space.freeBytes };
  } catch {
    return null;
  }
}

/**
 * The bytes of a folder an agent writes besides its workspace: 0 when it does not exist (or went
 * away while measured), null when it exists and could not be measured.
 */
async function besideBytes(measure: () => Promise<number | null>, folder: string): Promise<number | null> {
  if (!(await pathExists(folder))) return 0;
  const bytes = await measure().catch(() => null);
  if (bytes !== null) return bytes;
  return (await pathExists(folder)) ? null : 0;
}

/** Whether every folder that exists is on that device (one elsewhere: its growth is not seen in the root's free space). */
async function allOn(dev: number, folders: string[]): Promise<boolean> {
  for (const folder of folders) {
    const info = await stat(folder).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : undefined));
    if (info === undefined || (info !== null && info.dev !== dev)) return false;
  }
  return true;
}

/** One round: each workspace with running agents measured, and those over their quota stopped. */
async function checkLimits(
  deps: { pool: pg.Pool; config: Config; logger: Logger },
  sweep: boolean,
  lastWalk: Map<string, LastWalk>,
  usageNow: boolean,
): Promise<number> {
  const { pool, config, logger } = deps;
  const executors = executorsOf(deps);
  const { byEnvironment: running, owners, quotaOf } = await runningByEnvironment(pool, config.hostId);
  if (usageNow || sweep) await recordUsage(pool, config, owners, sweep);
  if (running.size === 0) return 0;
  let stopped = 0;
  // The root's filesystem, read once: a workspace within its quota by more than the fall of its
  // free space since its last walk is not walked again (most rounds cost a statfs, not a `du`).
  const root = await rootFilesystem(config.workspaceRoot);
  for (const id of lastWalk.keys()) if (!running.has(id)) lastWalk.delete(id);
  // Only the workspaces whose agents run: the host's others are not read every round.
  for (const place of await workspacesToMeasure(pool, config.hostId, { environmentIds: [...running.keys()] })) {
    const agents = running.get(place.environmentId);
    // Measured only where a quota applies: its task's own, else the operator's.
    const quota = quotaOf.get(place.environmentId) ?? config.taskDiskQuotaBytes;
    if (!agents || quota === null) continue;
    const last = lastWalk.get(place.environmentId);
    const fresh = last && Date.now() - last.at < WALK_AT_LEAST_EVERY * config.diskQuotaCheckEveryMs;
    if (last && fresh && root && surelyWithinQuota(last, root.freeBytes, quota)) continue;
    lastWalk.delete(place.environmentId);
    const executor = executors.at(place);
    const bytes = await executor.workspaceBytes(place).catch(() => null);
    // Unreadable: walked again next round, never taken as within its quota.
    if (bytes === null) continue;
    // Its agents' homes and object stores count too: what an agent writes anywhere it may is its task's.
    const besides = new Set((await Promise.all(agents.map(writtenBesides))).flat());
    let more: number | null = 0;
    for (const folder of besides) {
      const size = await besideBytes(() => executor.workspaceBytes({ ...place, workspacePath: folder }), folder);
      more = size === null || more === null ? null : more + size;
    }
    // One of them unreadable: like the workspace, walked again next round, never taken as within quota.
    if (more === null) continue;
    const folders = [place.workspacePath, ...besides];
    if (root && !place.sshTargetId && (await allOn(root.dev, folders)))
      lastWalk.set(place.environmentId, { bytes: bytes + more, freeBefore: root.freeBytes, at: Date.now() });
    await recordEnvironmentDisk(pool, {
      environmentId: place.environmentId,
      hostId: config.hostId,
      bytes: bytes + more,
    });
    if (!(await environmentOverQuota(pool, place.environmentId, config.taskDiskQuotaBytes))) continue;
    for (const { id } of agents) {
      const exec = await findExecution(pool, id);
      if (!exec || exec.status !== 'running') continue;
      await executors.at({ sshTargetId: exec.ssh_target_id }).stopAgent(exec);
      await markOutcome(pool, exec.id, 'disk_quota');
      stopped++;
      logger.warn(
        { executionId: exec.id, environmentId: place.environmentId },
        'agent stopped: its task is over its disk quota',
      );
    }
  }
  return stopped;
}

/** How often the check also looks for groups no supervisor left (it reads every group of the host). */
const SWEEP_EVERY_MS = 5 * 60_000;

/** Checks now and every interval after (never two at once); `stop()` ends it once a round in flight ended. */
export function startLimitChecks(deps: { pool: pg.Pool; config: Config; logger: Logger }): {
  stop(): Promise<void>;
} {
  let inFlight: Promise<unknown> | null = null;
  let lastSweep = 0;
  // Each running workspace's last walk and the root's free space right before it.
  const lastWalk = new Map<string, LastWalk>();
  // The groups' use (memory, processes) is recorded as often as before the quota was checked every
  // second: every 30 rounds, so the views' figures do not churn (and the database is not written)
  // on every round.
  let lastUsage = 0;
  const check = () => {
    const sweep = Date.now() - lastSweep >= SWEEP_EVERY_MS;
    if (sweep && !inFlight) lastSweep = Date.now();
    const usageNow = Date.now() - lastUsage >= WALK_AT_LEAST_EVERY * deps.config.diskQuotaCheckEveryMs;
    if (usageNow && !inFlight) lastUsage = Date.now();
    inFlight ??= checkLimits(deps, sweep, lastWalk, usageNow)
      .catch((err: unknown) =>
        outageOf(err)
          ? deps.logger.warn({ hostId: deps.config.hostId }, 'database unavailable; limits check missed')
          : deps.logger.error({ err, hostId: deps.config.hostId }, 'limits check failed'),
      )
      .finally(() => (inFlight = null));
  };
  const timer = setInterval(check, deps.config.diskQuotaCheckEveryMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await inFlight;
    },
  };
}

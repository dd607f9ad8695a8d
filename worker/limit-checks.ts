/**
 * What each task's agents use, and each task's workspace within its disk quota (issue 46). Every
 * `diskQuotaCheckEveryMs` this worker reads the control group of each task whose agents run here
 * (memory and processes, recorded for the views and the metrics), and
 * measures the workspaces of its host whose agents run (through their executor, as the disk
 * measurement does), records the figure, and where a workspace is over its task's quota stops its
 * agents (their executions end `stopped` with the outcome `disk_quota`, their sessions `stopped`).
 * Admission then refuses launches and resumes in it (`task_disk_quota`, 507) until it is measured
 * under its quota, or its quota is raised. A measured bound: an agent can write past the quota
 * for up to one interval (and what its disk allows meanwhile) before it is stopped.
 */
import path from 'node:path';
import type pg from 'pg';
import type { Logger } from 'pino';
import { environmentOverQuota, recordEnvironmentDisk, workspacesToMeasure } from '../db/disk';
import { findExecution, markOutcome } from '../db/executions';
import type { Config } from '../domain/config';
import { outageOf } from '../domain/outage';
import { pathExists } from '../executors/host/workspace-fs';
import { executorsOf } from '../executors/registry';
import { agentLimitsLayout, sweepAgentGroups, taskUsage } from '../executors/host/agent-limits';
import { recordTaskUsage } from '../db/task-usage';

interface RunningAgent {
  id: string;
  /** Its home (in its run folder, beside its log): written by it, counted with its workspace. */
  home: string | null;
}

/** The running executions of this host's agents, by the environment their session works in, and those environments' owners. */
async function runningByEnvironment(
  pool: pg.Pool,
  hostId: string,
): Promise<{ byEnvironment: Map<string, RunningAgent[]>; owners: Set<string> }> {
  const res = await pool.query<{
    environment_id: string;
    owner: string;
    id: string;
    log_path: string;
    ssh_target_id: string | null;
  }>(
    `SELECT s.environment_id, e.task_id AS owner, x.id, x.log_path, x.ssh_target_id
       FROM executions x JOIN sessions s ON s.id = x.session_id JOIN task_environments e ON e.id = s.environment_id
      WHERE x.host_id = $1 AND x.status = 'running'`,
    [hostId],
  );
  const byEnvironment = new Map<string, RunningAgent[]>();
  const owners = new Set<string>();
  for (const row of res.rows) {
    if (!row.ssh_target_id) owners.add(row.owner);
    const agent = { id: row.id, home: row.ssh_target_id ? null : path.join(path.dirname(row.log_path), 'home') };
    byEnvironment.set(row.environment_id, [...(byEnvironment.get(row.environment_id) ?? []), agent]);
  }
  return { byEnvironment, owners };
}

/** The control group of each task whose agents run on this host, read and recorded (none: the host's rows go). */
async function recordUsage(pool: pg.Pool, config: Config, owners: Set<string>): Promise<void> {
  const layout = await agentLimitsLayout(config.limits).catch(() => null);
  // Groups no supervisor left (it was killed first), once a minute old and empty.
  if (layout) await sweepAgentGroups(layout, { minAgeMs: 60_000 });
  const usage: { taskId: string; memoryBytes: number; pids: number }[] = [];
  if (layout)
    for (const taskId of owners) {
      const used = await taskUsage(layout, taskId);
      if (used) usage.push({ taskId, ...used });
    }
  await recordTaskUsage(pool, config.hostId, usage);
}

/** One round: each workspace with running agents measured, and those over their quota stopped. */
async function checkLimits(deps: { pool: pg.Pool; config: Config; logger: Logger }): Promise<number> {
  const { pool, config, logger } = deps;
  const executors = executorsOf(deps);
  const { byEnvironment: running, owners } = await runningByEnvironment(pool, config.hostId);
  await recordUsage(pool, config, owners);
  if (running.size === 0) return 0;
  let stopped = 0;
  for (const place of await workspacesToMeasure(pool, config.hostId)) {
    const agents = running.get(place.environmentId);
    if (!agents) continue;
    const executor = executors.at(place);
    const bytes = await executor.workspaceBytes(place).catch(() => null);
    if (bytes === null) continue;
    // The agents' homes count too: what an agent writes anywhere it may is its task's.
    let homes = 0;
    for (const agent of agents)
      if (agent.home && (await pathExists(agent.home)))
        homes += (await executor.workspaceBytes({ ...place, workspacePath: agent.home }).catch(() => 0)) ?? 0;
    await recordEnvironmentDisk(pool, {
      environmentId: place.environmentId,
      hostId: config.hostId,
      bytes: bytes + homes,
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

/** Checks now and every interval after (never two at once); `stop()` ends it once a round in flight ended. */
export function startLimitChecks(deps: { pool: pg.Pool; config: Config; logger: Logger }): {
  stop(): Promise<void>;
} {
  let inFlight: Promise<unknown> | null = null;
  const check = () => {
    inFlight ??= checkLimits(deps)
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

/**
 * Agents of the `ssh` executor: started detached on the target in their own process group,
 * identified by the target's pid AND start time, output in a log on the target, the exit status
 * written there by the runner (ssh/remote-agent.ts). The records are the host's: the execution
 * row names the target, so every stop, cleanup and exit check asks that target, never the host's
 * own /proc.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { cleanupBarrierStands } from '../../db/barrier';
import {
  endExecution,
  findExecution,
  insertExecution,
  markStopped,
  setExecutionStatus,
  type ExecutionStatus,
} from '../../db/executions';
import { inTransaction, type Db, type Pool } from '../../db/pool';
import { dropSpawnIntent, recordSpawnIntent } from '../../db/spawn-intents';
import { agentVariableProblem } from '../../domain/agent-env';
import { profileNamed } from '../../domain/agent-builtins';
import { deliveredCommand } from '../../domain/agent-prompt';
import {
  findRemoteMarked,
  readRemoteExitStatus,
  remoteProcesses,
  startRemoteAgent,
  stopRemoteAgent,
  stopRemoteGroup,
} from '../../ssh/remote-agent';
import type { SshTarget } from '../../ssh/connection';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { loadSshTarget, typedSsh } from './workspace';
import type { StartAgentInput, StartedAgent } from '../agent-start';
import type { RecordedAgent, StartHooks } from '../executor';
import { EXECUTION_MARK } from '../host/process-identity';
import { exitStatusPath } from '../host/agent-shim';
import { remoteRunsDir } from '../../ssh/remote-log';

/** Where an execution's log and status live on its target: outside every task folder, so an agent never sees them in its workspace. */
export function remoteRunFiles(target: SshTarget, input: { taskId: string; sessionId: string; executionId: string }) {
  const logPath = path.posix.join(remoteRunsDir(target), input.taskId, input.sessionId, `${input.executionId}.log`);
  return { logPath, statusPath: exitStatusPath(logPath), promptPath: logPath.replace(/\.log$/, '.prompt') };
}

/** The agent's variables on the target: the profile's and the request's, then the service's identity of it; nothing of the service's own environment. */
export function remoteAgentEnvironment(input: StartAgentInput): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.env ?? {}))
    if (agentVariableProblem(name) === null) env[name] = value;
  env.TWS_SESSION_ID = input.sessionId;
  env.TWS_TASK_ID = input.taskId;
  env.TWS_WORKSPACE = input.cwd;
  env[EXECUTION_MARK] = input.executionId;
  return env;
}

export function sshAgents({ pool, config, logger }: ActivityDeps) {
  /**
   * The start on the target and its record in one transaction under the cleanup barrier's share
   * lock, as for a host agent: a cleanup either prepares after this (and its snapshot holds the
   * process) or before (and nothing starts). A target that does not answer starts nothing.
   */
  async function startRemote(input: StartAgentInput, hooks: StartHooks): Promise<StartedAgent> {
    const { recordWithStart, afterRecord } = hooks;
    // Its record if it has one: a re-run answers it.
    const recorded = await findExecution(pool, input.executionId);
    if (recorded) return { executionId: recorded.id, pid: recorded.pid, status: recorded.status };
    const target = await loadSshTarget(pool, input.sshTargetId);
    const files = remoteRunFiles(target, input);
    const record = (client: Db, agent: { pid: number; startTime: string }) =>
      insertExecution(client, {
        id: input.executionId,
        session_id: input.sessionId,
        host_id: config.hostId,
        pid: agent.pid,
        process_start_time: agent.startTime,
        cwd: input.cwd,
        log_path: files.logPath,
        status: 'running',
        ssh_target_id: target.id,
      });
    // At most one agent per execution id: the intent is committed before the start. Found
    // already, a worker died between an earlier start and its record: the agent it started
    // (found on the target by its mark, TWS_EXECUTION_ID) is adopted, never started twice.
    if (
      !(await recordSpawnIntent(pool, {
        executionId: input.executionId,
        sessionId: input.sessionId,
        taskId: input.taskId,
        hostId: config.hostId,
      }))
    ) {
      const marked = await findRemoteMarked(target, { name: EXECUTION_MARK, value: input.executionId }).catch(
        (err: unknown) => Promise.reject(typedSsh(err)),
      );
      if (marked?.leader) {
        const leader = marked.leader;
        const barred = await inTransaction(pool, async (client) => {
          const stands = await cleanupBarrierStands(client, [input.taskId, input.environmentTaskId]);
          // Recorded either way: a barred agent is stopped by this launch's undo, by its execution id.
          await record(client, leader);
          await recordWithStart?.(client);
          await dropSpawnIntent(client, input.executionId);
          if (!stands) await afterRecord?.(client);
          return stands;
        });
        logger.warn(
          { sessionId: input.sessionId, executionId: input.executionId, pid: leader.pid },
          'adopted a remote agent whose start was never recorded',
        );
        if (barred) throw typedFailure('task_cleanup_in_progress');
        return { executionId: input.executionId, pid: leader.pid, status: 'running' };
      }
      // Members of a group whose runner ended: leftovers of that start, never this one's agent.
      if (
        marked &&
        (await stopRemoteGroup(target, { pgid: marked.pgid, graceMs: config.agentStopGraceMs })) !== 'stopped'
      )
        throw typedFailure('internal');
    }
    let spawned = false;
    const started = await inTransaction(pool, async (client) => {
      if (await cleanupBarrierStands(client, [input.taskId, input.environmentTaskId])) {
        await dropSpawnIntent(client, input.executionId);
        return null;
      }
      // One agent per session: another that runs is stopped first, under the session's lock.
      const already = await hooks.beforeStart(client);
      if (already) return { pid: already.pid, recorded: already.status };
      await recordWithStart?.(client);
      const agent = await startRemoteAgent(target, {
        cwd: input.cwd,
        logPath: files.logPath,
        statusPath: files.statusPath,
        promptPath: files.promptPath,
        prompt: input.prompt ?? null,
        env: remoteAgentEnvironment(input),
        // Its prompt as its profile reads it (this host's configuration); its credentials are never
        // sent to a target (a launch of a profile with credentials is refused for ssh).
        argv: deliveredCommand(
          input.command,
          profileNamed(config, input.agentProfile)?.prompt,
          input.prompt,
          files.promptPath,
        ),
        // What the target allows of its limits: its memory and processes, by ulimit.
        limits: config.limits.enabled ? (input.limits ?? config.limits.defaults) : null,
      });
      if ('notStartable' in agent) throw typedFailure('invalid_request', { reason: 'agent_command_not_startable' });
      spawned = true;
      await record(client, agent);
      await dropSpawnIntent(client, input.executionId);
      await afterRecord?.(client);
      return agent;
    }).catch(async (err: unknown) => {
      // Nothing started (refused before the spawn, or the target did not answer): no intent is
      // left. An agent that started but was not recorded keeps the intent: no second one starts.
      // (An intent that cannot be dropped only makes a re-run look for a start first: never a second agent.)
      if (!spawned)
        await dropSpawnIntent(pool, input.executionId).catch((dropErr: unknown) =>
          logger.warn({ err: dropErr, executionId: input.executionId }, 'spawn intent left in place'),
        );
      throw typedSsh(err);
    });
    if (!started) throw typedFailure('task_cleanup_in_progress');
    return {
      executionId: input.executionId,
      pid: started.pid,
      status: 'recorded' in started ? started.recorded : 'running',
    };
  }

  /**
   * Stops a recorded remote agent: marked stopped before the signal, then its group on the target
   * (only while the pid still has its start time), the outcome read from the target. False when it
   * would not stop (the execution reads running again). A target that does not answer throws.
   */
  async function stopRemote(exec: RecordedAgent): Promise<ExecutionStatus> {
    const target = await loadSshTarget(pool, exec.ssh_target_id);
    await setExecutionStatus(pool, exec.id, 'stopped');
    let outcome: Awaited<ReturnType<typeof stopRemoteAgent>>;
    try {
      outcome = await stopRemoteAgent(target, {
        pid: exec.pid,
        startTime: exec.process_start_time,
        graceMs: config.agentStopGraceMs,
      });
    } catch (err) {
      await setExecutionStatus(pool, exec.id, 'running');
      throw typedSsh(err);
    }
    if (outcome === 'would_not_stop') {
      await setExecutionStatus(pool, exec.id, 'running');
      throw typedFailure('internal');
    }
    let status: Awaited<ReturnType<typeof readRemoteExitStatus>>;
    try {
      status = await readRemoteExitStatus(target, exitStatusPath(exec.log_path));
    } catch (err) {
      // Its outcome cannot be read now: nothing is concluded from that. Stopped by this stop, it
      // is `stopped` (how it ended unknown); gone before it, it reads running again, for the exit
      // check to conclude once the target answers.
      logger.warn(
        { err: err instanceof Error ? err.message : err, executionId: exec.id },
        'remote exit status unreadable',
      );
      if (outcome === 'gone') {
        await setExecutionStatus(pool, exec.id, 'running');
        throw typedSsh(err);
      }
      status = null;
    }
    if (outcome === 'gone' && !status) {
      await setExecutionStatus(pool, exec.id, 'vanished');
      return 'vanished';
    }
    await markStopped(pool, exec.id, status);
    return 'stopped';
  }

  return {
    startAgent: startRemote,
    stopAgent: stopRemote,
    recoverAgents: (hostId: string) => reconcileRemoteExecutions(pool, hostId, logger),
  };
}

/**
 * Remote agents of this host recorded running whose process is gone: their outcome is read from
 * the status file the runner wrote (none: `vanished`). A target that does not answer leaves its
 * agents as they are: nothing is concluded from silence.
 */
async function reconcileRemoteExecutions(
  pool: Pool,
  hostId: string,
  logger: Pick<Logger, 'info' | 'warn'>,
): Promise<{ alive: number; exited: number; vanished: number }> {
  const counts = { alive: 0, exited: 0, vanished: 0 };
  const res = await pool.query<{
    id: string;
    pid: number;
    process_start_time: string;
    log_path: string;
    ssh_target_id: string;
  }>(
    `SELECT id, pid, process_start_time, log_path, ssh_target_id FROM executions WHERE host_id = $1 AND status = 'running' AND ssh_target_id IS NOT NULL ORDER BY ssh_target_id`,
    [hostId],
  );
  const byTarget = new Map<string, typeof res.rows>();
  for (const row of res.rows) byTarget.set(row.ssh_target_id, [...(byTarget.get(row.ssh_target_id) ?? []), row]);
  for (const [targetId, rows] of byTarget) {
    try {
      const target = await loadSshTarget(pool, targetId);
      const alive = await remoteProcesses(
        target,
        rows.map((r) => ({ pid: r.pid, startTime: r.process_start_time })),
      );
      for (const [i, row] of rows.entries()) {
        if (alive[i]!.alive) {
          counts.alive++;
          continue;
        }
        const outcome = await readRemoteExitStatus(target, exitStatusPath(row.log_path));
        const status = outcome ? 'exited' : 'vanished';
        const ended = await endExecution(pool, row.id, {
          status,
          exitCode: outcome?.exitCode ?? null,
          signal: outcome?.signal ?? null,
          endedAt: outcome?.endedAt ?? null,
        });
        if (ended) {
          counts[status]++;
          logger.info(
            { sessionId: ended.sessionId, executionId: row.id, status, exitCode: outcome?.exitCode ?? null },
            'remote agent ended',
          );
        }
      }
    } catch (err) {
      logger.warn(
        { err: err instanceof Error ? err.message : err, sshTargetId: targetId },
        'remote agents not checked now; the target did not answer',
      );
    }
  }
  return counts;
}

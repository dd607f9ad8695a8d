/**
 * Agent processes: started detached in their own process group with the workspace as working
 * directory and output in a per-session log file, so they outlive a worker restart.
 */
import { spawn } from 'node:child_process';
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { cleanupBarrierStands } from '../db/barrier';
import { findExecution, insertExecution, setExecutionStatus, type ExecutionStatus } from '../db/executions';
import { inTransaction } from '../db/pool';
import type { ActivityDeps } from './deps';
import { typedFailure } from './failures';
import { isSameProcess, processStartTime } from './process-identity';
import { isRealDirectory } from './workspace-fs';

export interface StartAgentInput {
  executionId: string;
  sessionId: string;
  taskId: string;
  environmentId: string;
  /** The environment's owner: its cleanup barrier also stops this start. */
  environmentTaskId: string;
  cwd: string;
  command: string[];
}

export interface StartedAgent {
  executionId: string;
  pid: number;
  status: ExecutionStatus;
}

/** Variables an agent must never inherit from the service that starts it. */
const SECRET_ENV = ['TWS_USER_TOKEN', 'TWS_OPERATOR_TOKEN', 'DATABASE_URL', 'TEMPORAL_API_KEY'];

async function spawnDetached(input: StartAgentInput, logPath: string): Promise<number> {
  const log = await open(logPath, 'a');
  const env: NodeJS.ProcessEnv = { ...process.env, TWS_SESSION_ID: input.sessionId, TWS_TASK_ID: input.taskId, TWS_WORKSPACE: input.cwd };
  for (const name of SECRET_ENV) delete env[name];
  try {
    const child = spawn(input.command[0]!, input.command.slice(1), { cwd: input.cwd, detached: true, stdio: ['ignore', log.fd, log.fd], env });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('spawn', () => resolve(child.pid!));
      child.once('error', reject);
    });
    child.unref();
    return pid;
  } catch {
    throw typedFailure('invalid_request', { reason: 'agent_command_not_startable' });
  } finally {
    await log.close();
  }
}

export function agentProcessActivities({ pool, config }: ActivityDeps) {
  return {
    async startAgent(input: StartAgentInput): Promise<StartedAgent> {
      const recorded = await findExecution(pool, input.executionId);
      if (recorded) return { executionId: recorded.id, pid: recorded.pid, status: recorded.status };
      // The working directory is checked right before use: a stale path is never a launch directory.
      if (!(await isRealDirectory(input.cwd))) throw typedFailure('workspace_reuse_unsafe');

      const logDir = path.join(config.logDir, input.sessionId);
      await mkdir(logDir, { recursive: true });
      const logPath = path.join(logDir, `${input.executionId}.log`);
      // The spawn and its record happen under a share lock of the task rows: a cleanup either
      // prepares after this (and its snapshot holds the process) or before (and nothing starts).
      const started = await inTransaction(pool, async (client) => {
        if (await cleanupBarrierStands(client, [input.taskId, input.environmentTaskId])) return null;
        const pid = await spawnDetached(input, logPath);
        const startTime = await processStartTime(pid);
        const status: ExecutionStatus = startTime ? 'running' : 'exited';
        await insertExecution(client, {
          id: input.executionId,
          session_id: input.sessionId,
          host_id: config.hostId,
          pid,
          process_start_time: startTime ?? 'exited-before-identified',
          cwd: input.cwd,
          log_path: logPath,
          status,
        });
        return { pid, status };
      });
      if (!started) throw typedFailure('task_cleanup_in_progress');
      const { pid, status } = started;
      return { executionId: input.executionId, pid, status };
    },

    /** SIGTERM to the process group, SIGKILL after the grace period; only if it is still the same process. */
    async stopAgent(executionId: string): Promise<ExecutionStatus> {
      const exec = await findExecution(pool, executionId);
      if (!exec) return 'stopped';
      if (exec.status !== 'running') return exec.status;
      if (!(await isSameProcess(exec.pid, exec.process_start_time))) {
        await setExecutionStatus(pool, executionId, 'vanished');
        return 'vanished';
      }
      const signalGroup = (signal: NodeJS.Signals) => {
        try {
          process.kill(-exec.pid, signal);
        } catch {
          // already gone
        }
      };
      signalGroup('SIGTERM');
      const deadline = Date.now() + config.agentStopGraceMs;
      while (Date.now() < deadline && (await isSameProcess(exec.pid, exec.process_start_time))) await new Promise((r) => setTimeout(r, 50));
      if (await isSameProcess(exec.pid, exec.process_start_time)) signalGroup('SIGKILL');
      await setExecutionStatus(pool, executionId, 'stopped');
      return 'stopped';
    },
  };
}

export type AgentProcessActivities = ReturnType<typeof agentProcessActivities>;

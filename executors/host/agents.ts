/**
 * Agent processes: started detached in their own process group with the workspace as working
 * directory and output in a per-session log file, so they outlive a worker restart.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { cleanupBarrierStands } from '../../db/barrier';
import {
  claimExecutionStart,
  findExecution,
  markStopped,
  recordExecutionOfIntent,
  setExecutionStatus,
  type ExecutionStatus,
} from '../../db/executions';
import { inTransaction, type Db } from '../../db/pool';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { dropSpawnIntent } from '../../db/spawn-intents';
import { findMarkedGroup, isSameProcess, stopMarkedGroup, stopProcessGroup } from './process-identity';
import { isRealDirectory } from './workspace-fs';
import { AGENT_SUPERVISOR_MISSING, readExitStatus } from './agent-shim';
import { bringAgentObjectsHome, collectExit, watchAgentBranch } from './exits';
import type { StartAgentInput, StartedAgent } from '../agent-start';
import type { AgentOperations, RecordedAgent, StartHooks } from '../executor';
import { agentUid } from './agent-uid';
import { agentLimitsLayout, sweepAgentGroups } from './agent-limits';
import { spawnDetached, type AgentEntrance } from './agent-spawn';

/** The start time recorded for a supervisor that had ended before its own could be read: never a process's. */
const ENDED_BEFORE_IDENTIFIED = 'exited-before-identified';

/** Refusals of a start raised before its supervisor was spawned. */
const REFUSED_BEFORE_START = new Set([
  'invalid_request',
  'executor_unavailable',
  'container_image_missing',
  'workspace_reuse_unsafe',
  'task_cleanup_in_progress',
]);

const supervisorMissing = (err: ApplicationFailure): boolean =>
  err.type === 'internal' &&
  (err.details?.[0] as { reason?: unknown } | undefined)?.reason === 'agent_supervisor_missing';

/**
 * Stops a recorded agent: its execution is marked stopped before the signal (the exit that follows
 * is the service's doing, not the agent's own), then its group is stopped. False when it would not
 * stop: the execution reads running again. One stop for a session stop, a resume and a cleanup.
 */
export async function stopRecordedAgent(
  pool: Db,
  agent: { executionId: string; pid: number; processStartTime: string },
  graceMs: number,
): Promise<boolean> {
  await setExecutionStatus(pool, agent.executionId, 'stopped');
  if (await stopProcessGroup(agent.pid, agent.processStartTime, graceMs)) return true;
  await setExecutionStatus(pool, agent.executionId, 'running');
  return false;
}

/**
 * The host's agents, for the worktree and local executors alike; `placeOf`, for an executor whose
 * agents run elsewhere on this host (a task's container), gives the uid and the entrance of that
 * place: the start, its records and its stop are the same.
 */
export function hostAgents(
  deps: ActivityDeps,
  placeOf?: (input: StartAgentInput) => Promise<{ uid: number; entrance: AgentEntrance }>,
): Pick<AgentOperations, 'startAgent' | 'stopAgent'> {
  const { pool, config } = deps;
  return {
    /**
     * The hooks' rows are written in the transaction that records the start (executors/executor.ts),
     * so a start refused (the command cannot start, a cleanup barrier) leaves none of them.
     */
    async startAgent(input: StartAgentInput, hooks: StartHooks): Promise<StartedAgent> {
      const { recordWithStart, afterRecord } = hooks;
      // Its record if it has one (a re-run answers it), else its spawn intent, in one statement;
      // the working directory is checked right before use, meanwhile: a stale path is never a
      // launch directory, and a refused start leaves no intent of its own behind.
      const intent = {
        executionId: input.executionId,
        sessionId: input.sessionId,
        taskId: input.taskId,
        hostId: config.hostId,
      };
      const [claim, cwdIsDirectory] = await Promise.all([
        claimExecutionStart(pool, intent),
        isRealDirectory(input.cwd),
      ]);
      if (claim.recorded)
        return { executionId: claim.recorded.id, pid: claim.recorded.pid, status: claim.recorded.status };
      if (!cwdIsDirectory) {
        if (claim.claimed) await dropSpawnIntent(pool, input.executionId);
        throw typedFailure('workspace_reuse_unsafe');
      }

      // The uid its sandbox runs it as, taken before anything of the start is written.
      const uid = placeOf ? null : await agentUid(deps, input);

      // Under the task: a task delete removes its agents' logs, those of sessions deleted before included.
      const logDir = path.join(config.logDir, input.taskId, input.sessionId);
      await mkdir(logDir, { recursive: true });
      const logPath = path.join(logDir, `${input.executionId}.log`);
      // With its spawn intent dropped in the same statement. Running even when its supervisor had
      // ended before its start time could be read (no process is ever that marker's): its end is
      // then collected as any end is, its outcome read from its status file, never guessed.
      const record = (client: Db, pid: number, startTime: string | null) =>
        recordExecutionOfIntent(client, {
          id: input.executionId,
          session_id: input.sessionId,
          host_id: config.hostId,
          pid,
          process_start_time: startTime ?? ENDED_BEFORE_IDENTIFIED,
          cwd: input.cwd,
          log_path: logPath,
          status: 'running',
        });

      // At most one agent per execution id, across processes and re-runs: the intent is committed
      // before the spawn. Found already, a process died between an earlier spawn and its record:
      // the agent it started (marked with this execution id) is adopted, not started twice.
      if (!claim.claimed) {
        const marked = await findMarkedGroup(input.executionId);
        if (marked?.leader) {
          const leader = marked.leader;
          const barred = await inTransaction(pool, async (client) => {
            const stands = await cleanupBarrierStands(client, [input.taskId, input.environmentTaskId]);
            // Recorded either way: a barred agent is stopped by this launch's undo, by its execution id.
            await record(client, leader.pid, leader.startTime);
            await recordWithStart?.(client);
            if (!stands) await afterRecord?.(client);
            return stands;
          });
          deps.logger.warn(
            { sessionId: input.sessionId, executionId: input.executionId, pid: leader.pid },
            'adopted an agent whose start was never recorded',
          );
          if (barred) throw typedFailure('task_cleanup_in_progress');
          return { executionId: input.executionId, pid: leader.pid, status: 'running' };
        }
        // Members of a group whose leader ended: leftovers of that start, never this one's agent.
        if (marked) await stopMarkedGroup(input.executionId, config.agentStopGraceMs);
      }

      // The spawn and its record happen under a share lock of the task rows: a cleanup either
      // prepares after this (and its snapshot holds the process) or before (and nothing starts).
      const started = await inTransaction(pool, async (client) => {
        if (await cleanupBarrierStands(client, [input.taskId, input.environmentTaskId])) {
          await dropSpawnIntent(client, input.executionId);
          return null;
        }
        const already = await hooks.beforeStart(client);
        if (already) {
          if (claim.claimed) await dropSpawnIntent(client, input.executionId);
          return { pid: already.pid, identified: true, recorded: already.status };
        }
        await recordWithStart?.(client);
        // Another place's (its container made or found here, under the cleanup barrier's lock too).
        const place = placeOf ? await placeOf(input) : null;
        const { pid, startTime } = await spawnDetached(
          input,
          logPath,
          config,
          () => void collectExit(deps, input.executionId, config.gitBinary),
          place ? place.uid : uid,
          place?.entrance ?? null,
        );
        await record(client, pid, startTime);
        await afterRecord?.(client);
        return { pid, identified: startTime !== null, recorded: undefined };
      }).catch(async (err) => {
        // Refused before anything ran (the command cannot start, no supervisor, its container could
        // not be had): no intent is left to adopt.
        const missing = err instanceof ApplicationFailure && supervisorMissing(err);
        if (missing) deps.logger.error({ executionId: input.executionId }, AGENT_SUPERVISOR_MISSING);
        if (err instanceof ApplicationFailure && (REFUSED_BEFORE_START.has(err.type ?? '') || missing))
          await dropSpawnIntent(pool, input.executionId);
        throw err;
      });
      if (!started) throw typedFailure('task_cleanup_in_progress');
      const { pid, identified } = started;
      // Its branch's moves bring its commits home while it runs (executors/host/ref-moves.ts).
      if (identified && !started.recorded)
        await watchAgentBranch(deps.logger, { id: input.executionId, log_path: logPath }, config.gitBinary);
      if (started.recorded) return { executionId: input.executionId, pid, status: started.recorded };
      if (identified) return { executionId: input.executionId, pid, status: 'running' };
      // Ended already: collected now (its exit's own collection may be first; one of them records it).
      await collectExit(deps, input.executionId, config.gitBinary);
      const status = (await findExecution(pool, input.executionId))?.status ?? 'running';
      return { executionId: input.executionId, pid, status };
    },

    /** SIGTERM to the process group, SIGKILL after the grace period; only if it is still the same process. */
    async stopAgent(exec: RecordedAgent): Promise<ExecutionStatus> {
      if (!(await isSameProcess(exec.pid, exec.process_start_time))) {
        await setExecutionStatus(pool, exec.id, 'vanished');
        return 'vanished';
      }
      const agent = { executionId: exec.id, pid: exec.pid, processStartTime: exec.process_start_time };
      if (!(await stopRecordedAgent(pool, agent, config.agentStopGraceMs))) throw typedFailure('internal');
      await markStopped(pool, exec.id, await readExitStatus(exec.log_path));
      // Its commits in the repository's own store once the stop is answered: the owner's git then
      // never meets a task branch whose objects are still in the task's store.
      await bringAgentObjectsHome(deps.logger, exec, config.gitBinary);
      // Its control groups, where its supervisor was stopped before it could leave them.
      const layout = await agentLimitsLayout(config.limits).catch(() => null);
      if (layout) await sweepAgentGroups(layout, { executionId: exec.id, minAgeMs: 0 }).catch(() => 0);
      return 'stopped';
    },
  };
}

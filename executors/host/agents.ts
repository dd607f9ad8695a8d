/**
 * Agent processes: started detached in their own process group with the workspace as working
 * directory and output in a per-session log file, so they outlive a worker restart.
 */
import { mkdir, open, writeFile } from 'node:fs/promises';
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
import {
  EXECUTION_MARK,
  findMarkedGroup,
  isSameProcess,
  processStartTime,
  stopMarkedGroup,
  stopProcessGroup,
} from './process-identity';
import { isRealDirectory } from './workspace-fs';
import { agentEnvironment } from '../../domain/agent-env';
import { agentNetwork, agentSandbox, SANDBOX_ARGS_VARIABLE, SERVICE_PROGRAM_ENV, systemBinary } from './agent-sandbox';
import {
  agentSupervisor,
  AGENT_SUPERVISOR_MISSING,
  commandStartable,
  exitStatusPath,
  readExitStatus,
  shimSandboxArgument,
} from './agent-shim';
import { collectExit } from './exits';
import type { StartAgentInput, StartedAgent } from '../agent-start';
import type { AgentOperations, RecordedAgent, StartHooks } from '../executor';
import { processStarter } from '../../git/process-starter';
import { agentUid, prepareSandbox, sandboxedCommand } from './agent-identity';
import { agentLimitsLayout, CGROUP_PROCS_VARIABLE, prepareAgentGroup, sweepAgentGroups } from './agent-limits';

/** The start time recorded for a supervisor that had ended before its own could be read: never a process's. */
const ENDED_BEFORE_IDENTIFIED = 'exited-before-identified';

/**
 * Starts the agent under its supervising parent (executors/host/agent-shim.ts), detached in its own
 * process group with the workspace as working directory and its output in the log. The supervisor is
 * the recorded process (pid + start time) and carries the execution id's mark; the agent's
 * environment is the allow-list of domain/agent-env.ts. `onExit` runs when the supervisor ends while
 * this process still runs: the agent's outcome is then in its status file. Its pid comes back with
 * its start time (null only when it could not be read). A host without the
 * supervisor binary refuses the start (`internal`, reason `agent_supervisor_missing`) before anything is written.
 */
export async function spawnDetached(
  input: StartAgentInput,
  logPath: string,
  config: ActivityDeps['config'],
  onExit: () => void,
  uid: number | null = null,
): Promise<{ pid: number; startTime: string | null }> {
  const env = agentEnvironment(
    process.env,
    { sessionId: input.sessionId, taskId: input.taskId, workspace: input.cwd },
    input.env ?? {},
  );
  // The agent's control groups are made while the rest of its start is prepared (a group left by a
  // start that fails after is empty, and swept): null without limits, false when they could not be made.
  const limitsLayout = await agentLimitsLayout(config.limits);
  const groupReady: Promise<string[] | null | false> = limitsLayout
    ? prepareAgentGroup(limitsLayout, config.limits.maximum, input, input.limits ?? config.limits.defaults).catch(
        () => false as const,
      )
    : Promise.resolve(null);
  const supervisorBinary = await agentSupervisor();
  if (!(await commandStartable(input.command[0]!, input.cwd, env.PATH)))
    throw typedFailure('invalid_request', { reason: 'agent_command_not_startable' });
  const promptPath = logPath.replace(/\.log$/, '') + '.prompt';
  if (input.prompt != null) {
    await writeFile(promptPath, input.prompt, { mode: 0o600 });
    env.TWS_PROMPT_FILE = promptPath;
  }
  // The supervisor and what it runs outside the sandbox get a fixed environment and absolute
  // paths: nothing of the request (PATH, LD_PRELOAD, ...) reaches a process outside it (issue 45).
  const supervisorEnv: Record<string, string> = { ...SERVICE_PROGRAM_ENV, [EXECUTION_MARK]: input.executionId };
  // In bubblewrap, as the workspace's own uid: the agent's own home in its run folder, everything of
  // the service hidden and closed, only its workspace (and its repositories' git folders) writable.
  const sandbox = await agentSandbox(config.agentSandbox);
  const network = sandbox ? await agentNetwork(config.agentSandbox, config.agentNetwork) : null;
  let command: string[];
  if (sandbox) {
    if (uid === null) throw typedFailure('internal', { reason: 'agent_uid_missing' });
    const argsFile = logPath.replace(/\.log$/, '') + '.args';
    const prepared = await prepareSandbox(input, { config, uid, logPath });
    command = await sandboxedCommand(input, env, prepared, { config, uid, sandbox, network, promptPath, argsFile });
    supervisorEnv[SANDBOX_ARGS_VARIABLE] = argsFile;
  } else {
    // TWS_AGENT_SANDBOX=none (the operator's choice): the agent's environment is set by env(1), started by its absolute path.
    command = [
      systemBinary('env') ?? '/usr/bin/env',
      '-i',
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      ...input.command,
    ];
  }
  // Its limits (issue 46): its own control group, inside its task's, which the supervisor puts it
  // in before it runs. Limits that cannot be set stop the start: never an agent without them.
  const procs = await groupReady;
  if (procs === false) throw typedFailure('internal', { reason: 'agent_limits_not_applied' });
  if (procs) supervisorEnv[CGROUP_PROCS_VARIABLE] = procs.join(':');
  // Opened here first so that a log that cannot be written fails as itself, not as the command.
  const log = await open(logPath, 'a', 0o600);
  try {
    // Through the process starter (git/process-starter.ts): a fork of this process costs a few
    // milliseconds of CPU, one of the starter a fraction; the supervisor's own output goes to the log.
    const supervisor = processStarter().spawn(
      supervisorBinary,
      [exitStatusPath(logPath), logPath, String(config.agentLogMaxBytes), shimSandboxArgument(network), ...command],
      {
        cwd: input.cwd,
        detached: true,
        output: { appendTo: logPath },
        env: supervisorEnv,
      },
    );
    // Listened for before the start is awaited (both can come in one chunk), and only for a supervisor that started.
    supervisor.once('exit', () => {
      if (supervisor.pid !== undefined) onExit();
    });
    const pid = await new Promise<number>((resolve, reject) => {
      supervisor.once('spawn', () => resolve(supervisor.pid!));
      supervisor.once('error', reject);
    });
    supervisor.unref(); // it never keeps this process up
    // Its start time as its parent read it before it could be reaped; read here only if that failed.
    return { pid, startTime: supervisor.startTime ?? (await processStartTime(pid)) };
  } catch {
    throw typedFailure('invalid_request', { reason: 'agent_command_not_startable' });
  } finally {
    await log.close();
  }
}

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

/** The host's agents, for the worktree and local executors alike (both run their agents on this host). */
export function hostAgents(deps: ActivityDeps): Pick<AgentOperations, 'startAgent' | 'stopAgent'> {
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

      // The uid its sandbox runs it as (issue 45), taken before anything of the start is written.
      const uid = await agentUid(deps, input);

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
        const { pid, startTime } = await spawnDetached(
          input,
          logPath,
          config,
          () => void collectExit(deps, input.executionId, config.gitBinary),
          uid,
        );
        await record(client, pid, startTime);
        await afterRecord?.(client);
        return { pid, identified: startTime !== null, recorded: undefined };
      }).catch(async (err) => {
        // Refused before anything ran (the command cannot start, no supervisor): no intent is left to adopt.
        const missing = err instanceof ApplicationFailure && supervisorMissing(err);
        if (missing) deps.logger.error({ executionId: input.executionId }, AGENT_SUPERVISOR_MISSING);
        if (err instanceof ApplicationFailure && (err.type === 'invalid_request' || missing))
          await dropSpawnIntent(pool, input.executionId);
        throw err;
      });
      if (!started) throw typedFailure('task_cleanup_in_progress');
      const { pid, identified } = started;
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
      // Its control groups, where its supervisor was stopped before it could leave them (issue 46).
      const layout = await agentLimitsLayout(config.limits).catch(() => null);
      if (layout) await sweepAgentGroups(layout, { executionId: exec.id, minAgeMs: 0 }).catch(() => 0);
      return 'stopped';
    },
  };
}

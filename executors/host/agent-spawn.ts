/**
 * An agent's start on this host: its supervisor spawned detached in its own process group, with
 * the agent in the host's sandbox, or entered into another place (a task's container) through an
 * {@link AgentEntrance}. Split from executors/host/agents.ts, which records and stops what this starts.
 */
import { open, writeFile } from 'node:fs/promises';
import { chownSync, writeFileSync } from 'node:fs';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { EXECUTION_MARK, processStartTime } from './process-identity';
import { agentEnvironment } from '../../domain/agent-env';
import { profileNamed } from '../../domain/agent-builtins';
import type { AgentProfile } from '../../domain/agent-profiles';
import { credentialEnvironment, deliveredCommand } from '../../domain/agent-prompt';
import { credentialCopies, serviceHome, taskHome } from './agent-home';
import {
  agentNetwork,
  agentSandbox,
  CONFINE_VARIABLE,
  SANDBOX_ARGS_VARIABLE,
  SERVICE_PROGRAM_ENV,
  systemBinary,
} from './agent-sandbox';
import { agentSupervisor, commandStartable, exitStatusPath, shimSandboxArgument } from './agent-shim';
import type { StartAgentInput } from '../agent-start';
import { processStarter } from '../../git/process-starter';
import { prepareSandbox, sandboxedCommand, type PreparedSandbox } from './agent-identity';
import { agentLimitsLayout, CGROUP_PROCS_VARIABLE, CGROUP_SHARED_VARIABLE, prepareAgentGroup } from './agent-limits';

/**
 * A place other than the host's sandbox that an agent is started in (a task's container,
 * executors/container/): the home its agents share there, where its prompt is written, and, once
 * the start is prepared (its workspace and git folders given to its uid), what enters it.
 */
export interface AgentEntrance {
  home: string;
  promptPath: string;
  enter(
    prepared: PreparedSandbox,
    env: Record<string, string>,
    /** The agent's argv, its prompt delivered as its profile reads it. */
    command: string[],
  ): Promise<{
    /** The command the supervisor runs: it reads the agent's variables from the arguments file's descriptor. */
    command: string[];
    /** The arguments file's text for those variables. */
    environmentText: string;
    /** The control groups the supervisor puts the agent in (the place's own). */
    cgroupProcs: string[];
  }>;
}

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
  entrance: AgentEntrance | null = null,
): Promise<{ pid: number; startTime: string | null }> {
  const env = agentEnvironment(
    process.env,
    { sessionId: input.sessionId, taskId: input.taskId, workspace: input.cwd },
    input.env ?? {},
  );
  // Its profile (read from this host's configuration, never from the run's input): how it reads its
  // prompt, and its credentials, set over the request's variables and stored nowhere.
  const profile = profileNamed(config, input.agentProfile);
  Object.assign(env, credentialEnvironment(profile?.credentials, process.env));
  const supervisorBinary = await agentSupervisor();
  // The supervisor and what it runs outside the sandbox get a fixed environment and absolute
  // paths: nothing of the request (PATH, LD_PRELOAD, ...) reaches a process outside it.
  const supervisorEnv: Record<string, string> = { ...SERVICE_PROGRAM_ENV, [EXECUTION_MARK]: input.executionId };
  const argsFile = logPath.replace(/\.log$/, '') + '.args';
  const { command, procs, sandboxArgument, usesArgsFile } = entrance
    ? await enteredPlace(input, env, { config, uid, logPath, entrance, argsFile, profile })
    : await onThisHost(input, env, { config, uid, logPath, argsFile, profile });
  if (usesArgsFile) supervisorEnv[SANDBOX_ARGS_VARIABLE] = argsFile;
  if (procs) supervisorEnv[CGROUP_PROCS_VARIABLE] = procs.join(':');
  // An entered place's groups are its own (the container's): the agent joins them and leaves them be.
  if (procs && entrance) supervisorEnv[CGROUP_SHARED_VARIABLE] = '1';
  // Entered from the host, it has none of the place's own seccomp profile: the supervisor's instead.
  if (entrance) supervisorEnv[CONFINE_VARIABLE] = '1';
  // Opened here first so that a log that cannot be written fails as itself, not as the command.
  const log = await open(logPath, 'a', 0o600);
  try {
    // Through the process starter (git/process-starter.ts): a fork of this process costs a few
    // milliseconds of CPU, one of the starter a fraction; the supervisor's own output goes to the log.
    const supervisor = processStarter().spawn(
      supervisorBinary,
      [exitStatusPath(logPath), logPath, String(config.agentLogMaxBytes), sandboxArgument, ...command],
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

interface StartPieces {
  command: string[];
  /** The control groups' `cgroup.procs` files the supervisor puts the agent in; null: none. */
  procs: string[] | null;
  /** The supervisor's `sandboxed` argument (agent-shim.ts). */
  sandboxArgument: string;
}

/**
 * On this host: in bubblewrap as the workspace's own uid (its home its task's, kept across its sessions,
 * everything of the service hidden and closed, only its workspace and git folders writable), or
 * with TWS_AGENT_SANDBOX=none as the service, by env(1); in its own control group inside its task's.
 */
async function onThisHost(
  input: StartAgentInput,
  env: Record<string, string>,
  p: {
    config: ActivityDeps['config'];
    uid: number | null;
    logPath: string;
    argsFile: string;
    profile: AgentProfile | undefined;
  },
): Promise<StartPieces & { usesArgsFile: boolean }> {
  const { config, uid, logPath, argsFile, profile } = p;
  // The agent's control groups are made while the rest of its start is prepared (a group left by a
  // start that fails after is empty, and swept): null without limits, false when they could not be made.
  const limitsLayout = await agentLimitsLayout(config.limits);
  const groupReady: Promise<string[] | null | false> = limitsLayout
    ? prepareAgentGroup(limitsLayout, config.limits.maximum, input, input.limits ?? config.limits.defaults).catch(
        () => false as const,
      )
    : Promise.resolve(null);
  if (!(await commandStartable(input.command[0]!, input.cwd, env.PATH)))
    throw typedFailure('invalid_request', { reason: 'agent_command_not_startable' });
  const promptPath = logPath.replace(/\.log$/, '') + '.prompt';
  if (input.prompt != null) {
    await writeFile(promptPath, input.prompt, { mode: 0o600 });
    env.TWS_PROMPT_FILE = promptPath;
  }
  const sandbox = await agentSandbox(config.agentSandbox);
  const network = sandbox ? await agentNetwork(config.agentSandbox, config.agentNetwork) : null;
  const run = { ...input, command: deliveredCommand(input.command, profile?.prompt, input.prompt, promptPath) };
  let command: string[];
  if (sandbox) {
    if (uid === null) throw typedFailure('internal', { reason: 'agent_uid_missing' });
    const home = taskHome(config.logDir, input.taskId, uid);
    const prepared = await prepareSandbox(input, { config, uid, logPath, home });
    const homeFiles = await credentialCopies(profile?.credentials, { logPath, home, uid });
    command = await sandboxedCommand(run, env, prepared, {
      config,
      uid,
      sandbox,
      network,
      promptPath,
      argsFile,
      homeFiles,
    });
  } else {
    // TWS_AGENT_SANDBOX=none (the operator's choice): the agent's environment is set by env(1), started by its absolute path.
    env.HOME = taskHome(config.logDir, input.taskId, 'service');
    await serviceHome(env.HOME, profile?.credentials);
    command = [
      systemBinary('env') ?? '/usr/bin/env',
      '-i',
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      ...run.command,
    ];
  }
  // Limits that cannot be set stop the start: never an agent without them.
  const procs = await groupReady;
  if (procs === false) throw typedFailure('internal', { reason: 'agent_limits_not_applied' });
  return { command, procs, sandboxArgument: shimSandboxArgument(network), usesArgsFile: sandbox !== null };
}

/**
 * Entered into another place (a task's container): its workspace and git folders prepared for the
 * uid as for the sandbox, its prompt where the place shows it, its variables in the arguments file
 * (read inside the place from the supervisor's descriptor, never in an argv outside it), and the
 * place's own control groups.
 */
async function enteredPlace(
  input: StartAgentInput,
  env: Record<string, string>,
  p: {
    config: ActivityDeps['config'];
    uid: number | null;
    logPath: string;
    entrance: AgentEntrance;
    argsFile: string;
    profile: AgentProfile | undefined;
  },
): Promise<StartPieces & { usesArgsFile: boolean }> {
  const { config, uid, logPath, entrance, argsFile, profile } = p;
  // Its home is the place's own, made once with it: no file can be shown read-only in it afterwards (refused at the launch).
  if (profile?.credentials?.files.length)
    throw typedFailure('invalid_request', { reason: 'agent_credentials_unplaceable' });
  if (uid === null) throw typedFailure('internal', { reason: 'agent_uid_missing' });
  const prepared = await prepareSandbox(input, { config, uid, logPath, home: entrance.home });
  env.HOME = prepared.home;
  if (input.prompt != null) {
    await writeFile(entrance.promptPath, input.prompt, { mode: 0o400 });
    chownSync(entrance.promptPath, uid, uid);
    env.TWS_PROMPT_FILE = entrance.promptPath;
  }
  const entered = await entrance.enter(
    prepared,
    env,
    deliveredCommand(input.command, profile?.prompt, input.prompt, entrance.promptPath),
  );
  writeFileSync(argsFile, entered.environmentText, { mode: 0o600 });
  return { command: entered.command, procs: entered.cgroupProcs, sandboxArgument: '0', usesArgsFile: true };
}

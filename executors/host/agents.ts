/**
 * Agent processes: started detached in their own process group with the workspace as working
 * directory and output in a per-session log file, so they outlive a worker restart.
 */
import { chmod, chown, lstat, mkdir, open, writeFile } from 'node:fs/promises';
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
import { isRealDirectory, pathExists } from './workspace-fs';
import { agentFolder, closeServiceFolders, giveTrees, serviceFiles, traversable, unreachable } from './agent-owner';
import { OWNERSHIP_MARKER_FILE, isWithinFolder } from '../../domain/task-layout';
import { agentEnvironment } from '../../domain/agent-env';
import { bubblewrapArgs, nulSeparated, SANDBOX_ARGS_FD, sandboxEnvironmentArgs } from '../../domain/sandbox';
import {
  agentNetwork,
  agentSandbox,
  dropTo,
  gitStoreLayout,
  SANDBOX_ARGS_VARIABLE,
  SERVICE_PROGRAM_ENV,
  systemBinary,
} from './agent-sandbox';
import {
  agentSupervisor,
  AGENT_SUPERVISOR_MISSING,
  commandStartable,
  exitStatusPath,
  readExitStatus,
  shimSandboxArgument,
} from './agent-shim';
import { collectExit, objectStoresListPath } from './exits';
import type { StartAgentInput, StartedAgent } from '../agent-start';
import type { AgentOperations, RecordedAgent, StartHooks } from '../executor';
import { processStarter } from '../../git/process-starter';
import { gitAt } from '../../git/git';
import { AgentUidsExhausted, agentUidOf, environmentUidOwner } from '../../db/agent-uids';

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
    const home = path.join(path.dirname(logPath), 'home');
    env.HOME = home;
    const slots =
      input.gitSlots ?? (input.gitDirs ?? []).map((commonDir) => ({ commonDir, worktreePath: null, refFolder: null }));
    const {
      binds: gitBinds,
      storeKeyDirs,
      owned,
      readOnlyFiles,
    } = await gitStoreLayout(slots, input.cwd, config.agentRoot);
    // Which task stores the service brings home when this agent ends (executors/host/exits.ts).
    await writeFile(objectStoresListPath(logPath), JSON.stringify(storeKeyDirs));
    const worktrees = slots.map((slot) => slot.worktreePath).filter((p): p is string => p !== null && p !== input.cwd);
    const marker = path.join(input.cwd, OWNERSHIP_MARKER_FILE);
    const pointers = [...readOnlyFiles, ...((await pathExists(marker)) ? [marker] : [])];
    const inCheckout = slots.some((slot) => isWithinFolder(slot.commonDir, input.cwd));
    await prepareOwnership({
      config,
      uid,
      home,
      workspace: inCheckout ? null : input.cwd,
      owned,
      pointers,
      logPath,
      repositories: slots.map((slot) => slot.commonDir),
      worktrees: slots.map((slot) => slot.worktreePath).filter((w): w is string => w !== null),
    });
    if (input.prompt != null) await chown(promptPath, uid, uid);
    const layout = {
      workspace: input.cwd,
      gitBinds,
      network: network?.policy,
      hidden: [config.dataDir, config.agentRoot, config.workspaceRoot, config.logDir],
      home,
      pinnedFolders: worktrees,
      pointers,
      readOnlyFiles: input.prompt != null ? [promptPath] : [],
    };
    // The agent's environment is read by bubblewrap from a file the supervisor opens and unlinks:
    // set inside the sandbox only, in no process's environment or argv outside it.
    const argsFile = logPath.replace(/\.log$/, '') + '.args';
    await writeFile(argsFile, nulSeparated(sandboxEnvironmentArgs(env)), { mode: 0o600 });
    supervisorEnv[SANDBOX_ARGS_VARIABLE] = argsFile;
    command = [
      ...dropTo(sandbox, uid),
      '--args',
      String(SANDBOX_ARGS_FD),
      ...bubblewrapArgs(layout),
      '--',
      ...input.command,
    ];
  } else {
    // TWS_AGENT_SANDBOX=none (the operator's choice): the agent's environment is set by env(1), started by its absolute path.
    command = [
      systemBinary('env') ?? '/usr/bin/env',
      '-i',
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      ...input.command,
    ];
  }
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
    const pid = await new Promise<number>((resolve, reject) => {
      supervisor.once('spawn', () => resolve(supervisor.pid!));
      supervisor.once('error', reject);
    });
    // Noticed at once while this process lives; unref: it never keeps this process up.
    supervisor.once('exit', onExit);
    supervisor.unref();
    // Its start time as its parent read it before it could be reaped; read here only if that failed.
    return { pid, startTime: supervisor.startTime ?? (await processStartTime(pid)) };
  } catch {
    throw typedFailure('invalid_request', { reason: 'agent_command_not_startable' });
  } finally {
    await log.close();
  }
}

/**
 * Before a sandboxed start (issue 45): the service's folders closed, the run folder traversable
 * and the home the agent's, the workspace the agent's uid's (given whole the first time, when its
 * top folder is not yet: after a materialization), the git folders it writes its, and every
 * pointer git follows the service's, read-only.
 */
/**
 * The agent's git trusts the repositories it is shown: their pointer files are the service's (root's),
 * not its uid's, which git would otherwise refuse as "dubious ownership". Its own home, its own config.
 */
const AGENT_GIT_CONFIG = '[safe]\n\tdirectory = *\n';

async function prepareOwnership(p: {
  config: ActivityDeps['config'];
  uid: number;
  home: string;
  /** The environment's folder, the agent's uid's; null for the source checkout (its owner's, left as it is). */
  workspace: string | null;
  owned: string[];
  pointers: string[];
  logPath: string;
  /** The repositories' common git dirs, bound into the sandbox. */
  repositories: string[];
  /** The worktrees of the workspace. */
  worktrees: string[];
}): Promise<void> {
  const { config, uid } = p;
  await closeServiceFolders(config);
  // A folder above the workspace or a repository that others cannot search (a home folder, 0700):
  // the sandbox could not bind it as the agent's uid. Refused before anything starts, and said why.
  if (await unreachable([p.workspace ?? p.logPath, ...p.repositories]))
    throw typedFailure('internal', { reason: 'agent_cannot_reach_workspace' });
  await traversable(config.logDir, path.dirname(p.logPath));
  await agentFolder(p.home, uid);
  const gitConfig = path.join(p.home, '.gitconfig');
  if (!(await pathExists(gitConfig))) {
    await writeFile(gitConfig, AGENT_GIT_CONFIG, { mode: 0o644, flag: 'wx' });
    await chown(gitConfig, uid, uid);
  }
  // Given whole once, when its top is not the uid's yet (a new worktree, a new store or ref folder):
  // an attach changes nothing that is already the agent's (R1.2), and costs one lstat per folder.
  // Each worktree on its own too: one made afresh in a task folder that stayed (a re-materialization
  // of a workspace of several repositories, an executor transition) is the service's until given.
  const worktrees = p.workspace ? p.worktrees.filter((w) => w !== p.workspace && isWithinFolder(w, p.workspace!)) : [];
  const trees: string[] = [];
  for (const folder of [...(p.workspace ? [p.workspace, ...worktrees] : []), ...p.owned]) {
    if (trees.some((given) => isWithinFolder(folder, given))) continue;
    const st = await lstat(folder).catch(() => null); // a worktree gone meanwhile: its start is judged elsewhere
    if (st && st.uid !== uid) trees.push(folder);
  }
  if (trees.length > 0) await giveTrees(trees, uid);
  if (p.workspace) await chmod(p.workspace, 0o700);
  // Its object stores hold commits not yet home: its own alone, as its workspace is.
  const stores = p.owned.filter((o) => isWithinFolder(o, path.join(config.agentRoot, 'agent-objects')));
  for (const store of stores) await chmod(store, 0o700);
  await serviceFiles(p.pointers);
  // Its index records each file's owner: read again once, so that no later git (an attach's
  // validation, a status) finds every entry changed and rewrites it.
  if (p.workspace)
    for (const worktree of p.worktrees.filter((w) => trees.some((given) => isWithinFolder(w, given))))
      await Promise.resolve()
        .then(() => gitAt(worktree, { binary: config.gitBinary }).raw(['update-index', '-q', '--refresh']))
        .catch(() => {}); // modified files make it exit 1: their entries stay as they are
  for (const store of stores) await traversable(config.agentRoot, path.dirname(store));
}

/**
 * The host uid a sandboxed agent runs as (issue 45), null without a sandbox: a worktree
 * environment's own (db/agent-uids.ts), or for a `local` agent (its workspace is the source
 * checkout, which holds its common git dir) the checkout's owner, as a person running an agent in
 * their checkout would: never root, which is refused (a worktree task is the way).
 */
export async function agentUid(
  deps: { pool: Db; config: ActivityDeps['config'] },
  input: StartAgentInput,
): Promise<number | null> {
  if (!(await agentSandbox(deps.config.agentSandbox))) return null;
  const inCheckout = (input.gitSlots ?? []).some((slot) => isWithinFolder(slot.commonDir, input.cwd));
  if (inCheckout) {
    const owner = (await lstat(input.cwd).catch(() => null))?.uid;
    if (owner === undefined) throw typedFailure('workspace_reuse_unsafe');
    if (owner === 0) throw typedFailure('invalid_request', { reason: 'local_checkout_owned_by_root' });
    return owner;
  }
  try {
    return await agentUidOf(deps.pool, environmentUidOwner(input.environmentTaskId), deps.config.agentUids);
  } catch (err) {
    if (err instanceof AgentUidsExhausted) throw typedFailure('internal', { reason: 'agent_uids_exhausted' });
    throw err;
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
        await hooks.beforeStart(client);
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
        return { pid, identified: startTime !== null };
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
      return 'stopped';
    },
  };
}

/**
 * A repository's setup command in a clone just made on an SSH target, run where the workspace is
 * and as its agents run there: started by the same runner (its own session and process group, the
 * target's limits, the agent's variables and nothing of the service's), its output in its own log
 * in the target's run folder (read through the API as an agent's is), its exit status written there
 * by the runner, and waited for within the time limit, after which its group is stopped. A re-run
 * of the step adopts the setup an earlier run started (by its execution id's mark), as for an agent,
 * within what is left of its limit (its age read on the target: a worker's restart never lengthens it).
 */
import path from 'node:path';
import type { SshTarget } from '../../ssh/connection';
import {
  findRemoteMarked,
  remoteProcessAgeMs,
  readRemoteExitStatus,
  remoteProcesses,
  startRemoteAgent,
  stopRemoteAgent,
  stopRemoteGroup,
} from '../../ssh/remote-agent';
import { EXECUTION_MARK } from '../host/process-identity';
import { remoteRunsDir } from '../../ssh/remote-log';
import type { StartAgentInput } from '../agent-start';
import { exitStatusPath } from '../host/agent-shim';
import type { ExitStatus } from '../host/agent-shim';
import type { ActivityDeps } from '../support/deps';
import { remoteAgentEnvironment } from './agents';
import { typedSsh } from './workspace';

/** Where a setup's log is on the target: in its session's run folder, beside its agents' (a task delete removes it). */
export const remoteSetupLogPath = (
  target: SshTarget,
  input: { taskId: string; sessionId: string },
  repositoryId: string,
): string => path.posix.join(remoteRunsDir(target), input.taskId, input.sessionId, `setup-${repositoryId}.log`);

/** How long between two looks at a running setup: short at first (most setups are quick), then a second. */
const pollDelay = (round: number) => Math.min(1000, 100 * 2 ** round);

/**
 * Runs `input.command` as the setup in `input.cwd` (the clone) on the target and waits for its end.
 * A command the target cannot start is a failed setup (exit 127, as a shell says), never a start of
 * something else; a target that stops answering fails the step (its typed refusal).
 */
export async function runRemoteSetup(
  { config }: ActivityDeps,
  target: SshTarget,
  input: StartAgentInput,
  logPath: string,
  timeoutMs: number,
): Promise<{ exit: ExitStatus | null; timedOut: boolean }> {
  const statusPath = exitStatusPath(logPath);
  try {
    // A re-run of the step (its worker died while the setup ran) never runs it twice: one that
    // ended is answered by its status file, one that still runs (its mark) is waited for.
    const already = await readRemoteExitStatus(target, statusPath);
    if (already) return { exit: already, timedOut: false };
    const marked = await findRemoteMarked(target, { name: EXECUTION_MARK, value: input.executionId });
    if (marked && !marked.leader)
      await stopRemoteGroup(target, { pgid: marked.pgid, graceMs: config.agentStopGraceMs });
    const started = marked?.leader
      ? marked.leader
      : await startRemoteAgent(target, {
          cwd: input.cwd,
          logPath,
          statusPath,
          env: remoteAgentEnvironment(input),
          argv: input.command,
          limits: config.limits.enabled ? (input.limits ?? config.limits.defaults) : null,
        });
    if ('notStartable' in started)
      return { exit: { exitCode: 127, signal: null, endedAt: new Date().toISOString() }, timedOut: false };
    // Adopted (its worker died while it ran): only what is left of its limit, from its own start.
    const ranMs = marked?.leader ? await remoteProcessAgeMs(target, marked.leader) : null;
    const deadline = Date.now() + Math.max(0, timeoutMs - (ranMs ?? 0));
    for (let round = 0; ; round++) {
      const exit = await readRemoteExitStatus(target, statusPath);
      if (exit) return { exit, timedOut: false };
      const [process] = await remoteProcesses(target, [started]);
      // Gone without a status: the runner itself was killed; its end is unknown.
      if (!process!.alive) return { exit: await readRemoteExitStatus(target, statusPath), timedOut: false };
      if (Date.now() >= deadline) {
        await stopRemoteAgent(target, { ...started, graceMs: config.agentStopGraceMs });
        return { exit: await readRemoteExitStatus(target, statusPath), timedOut: true };
      }
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(pollDelay(round), Math.max(0, deadline - Date.now()))),
      );
    }
  } catch (err) {
    throw typedSsh(err);
  }
}

/**
 * A repository's setup command (domain/workspace-setup.ts), run once in a workspace just made,
 * before its first agent: as an agent runs on this host (its sandbox as the workspace's uid, its
 * limits and network; or entered into the task's container), under the same supervisor (its own
 * log, its exit status), and waited for within a time limit, after which its group is stopped. It
 * never runs as the service and gets nothing of the service's environment.
 */
import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { StartAgentInput } from '../agent-start';
import type { ActivityDeps } from '../support/deps';
import { agentUid } from './agent-uid';
import { agentLimitsLayout, sweepAgentGroups } from './agent-limits';
import { readExitStatus, type ExitStatus } from './agent-shim';
import { spawnDetached, type AgentEntrance } from './agent-spawn';
import { findMarkedGroup, isSameProcess, processAgeMs, stopMarkedGroup, stopProcessGroup } from './process-identity';

export interface SetupRun {
  exit: ExitStatus | null;
  timedOut: boolean;
  logPath: string;
}

/** Where a setup's log is: in its session's run folder, beside its agents' (a task delete removes it). */
export const setupLogPath = (logDir: string, input: { taskId: string; sessionId: string }, repositoryId: string) =>
  path.join(logDir, input.taskId, input.sessionId, `setup-${repositoryId}.log`);

/**
 * Runs `input.command` as the setup (in `input.cwd`, the repository's worktree) and waits for its
 * end; `place` enters another place (the task's container) with its uid. A re-run of the step (its
 * worker died while the setup ran) never runs it twice: one that ended is answered by its status
 * file, one that still runs (found by its execution id's mark) is waited for, within what is left
 * of its limit (measured from its process's start: a worker's restart never lengthens it).
 */
export async function runSetup(
  deps: ActivityDeps,
  input: StartAgentInput,
  logPath: string,
  timeoutMs: number,
  place: { uid: number; entrance: AgentEntrance } | null,
): Promise<SetupRun> {
  const { config } = deps;
  const already = await readExitStatus(logPath);
  if (already) return { exit: already, timedOut: false, logPath };
  await mkdir(path.dirname(logPath), { recursive: true });
  let ended!: () => void;
  const end = new Promise<void>((resolve) => (ended = resolve));
  // Its log is opened before its start: without one, no earlier run started it (and /proc is not read).
  const begun = await access(logPath).then(
    () => true,
    () => false,
  );
  const marked = begun ? await findMarkedGroup(input.executionId) : null;
  // Members of a run whose supervisor is gone: leftovers, stopped before it runs again.
  if (marked && !marked.leader) await stopMarkedGroup(input.executionId, config.agentStopGraceMs);
  const { pid, startTime } = marked?.leader
    ? marked.leader
    : await spawnDetached(
        input,
        logPath,
        config,
        () => ended(),
        place ? place.uid : await agentUid(deps, input),
        place?.entrance ?? null,
      );
  // Adopted (its worker died while it ran): only what is left of its limit, from its own start.
  const ranMs = marked?.leader ? await processAgeMs(marked.leader.startTime) : null;
  const limitMs = Math.max(0, timeoutMs - (ranMs ?? 0));
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      resolve();
    }, limitMs);
  });
  // Its end as its supervisor's exit, or (where that was missed: it ended before its start time
  // was read) its process gone; polled every second besides.
  const gone = (async () => {
    while (!timedOut) {
      if (startTime === null || !(await isSameProcess(pid, startTime))) return;
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  await Promise.race([end, late, gone]);
  clearTimeout(timer);
  if (timedOut && startTime) await stopProcessGroup(pid, startTime, config.agentStopGraceMs);
  // Its control groups, as an agent's are once it ended.
  const layout = await agentLimitsLayout(config.limits).catch(() => null);
  if (layout) await sweepAgentGroups(layout, { executionId: input.executionId, minAgeMs: 0 }).catch(() => 0);
  // The supervisor writes the status as it ends: read once it is gone.
  for (let i = 0; i < 50 && startTime !== null && (await isSameProcess(pid, startTime)); i++)
    await new Promise((r) => setTimeout(r, 100));
  return { exit: await readExitStatus(logPath), timedOut, logPath };
}

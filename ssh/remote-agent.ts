/**
 * The agent's process on a remote machine: started detached under a small bash runner that leads
 * its own session and process group and records how the agent ended (as the local shim does),
 * identified afterwards by pid plus start time, stopped by group. Each function is one round trip.
 */
import type { SshTarget } from './connection';
import {
  AGENT_RUNNER,
  FIND_MARKED,
  PROCESSES,
  PROCESS_AGE,
  READ_EXIT_STATUS,
  READ_LOG,
  REMOVE_RUNS,
  START_AGENT,
  START_NOT_STARTABLE,
  START_REFUSALS,
  STOP_AGENT,
  STOP_GROUP,
} from './agent-scripts';
import { absolutePath, RemoteOperationError, runScript } from './remote-scripts';

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const START_TIME = /^[0-9]+$/;

/**
 * Starts the agent detached on the remote. The runner is the recorded process (the group leader);
 * argv runs as its child with the remote login environment plus `env` (and TWS_PROMPT_FILE when a
 * prompt is written, mode 600). A command exec would not find → { notStartable: true }, nothing started.
 */
export async function startRemoteAgent(
  target: SshTarget,
  a: {
    cwd: string;
    logPath: string;
    statusPath: string;
    promptPath?: string;
    prompt?: string | null;
    env: Record<string, string>;
    argv: string[];
    /** Applied by the runner where the target allows (ulimit: data and anonymous mappings, the user's processes); null: none. */
    limits?: { memoryBytes: number; pids: number } | null;
  },
): Promise<{ pid: number; startTime: string } | { notStartable: true }> {
  if (a.argv.length === 0 || !a.argv[0]) throw new RemoteOperationError('invalid_argument');
  const withPrompt = a.prompt !== undefined && a.prompt !== null && a.promptPath !== undefined;
  const env: [string, string][] = Object.entries(a.env);
  if (withPrompt) env.push(['TWS_PROMPT_FILE', a.promptPath!]);
  if (env.some(([name]) => !ENV_NAME.test(name))) throw new RemoteOperationError('invalid_env_name');
  const args = [
    AGENT_RUNNER,
    absolutePath(a.cwd),
    absolutePath(a.logPath),
    absolutePath(a.statusPath),
    withPrompt ? absolutePath(a.promptPath!) : '',
    a.limits ? `${Math.max(1, Math.floor(a.limits.memoryBytes / 1024))}:${a.limits.pids}` : '',
    String(env.length),
    ...env.flat(),
    ...a.argv,
  ];
  const result = await runScript(
    target,
    START_AGENT,
    args,
    withPrompt ? { stdin: Buffer.from(a.prompt!, 'utf8') } : undefined,
  );
  if (result.code === START_NOT_STARTABLE) return { notStartable: true };
  if (result.code !== 0) throw new RemoteOperationError(START_REFUSALS[result.code!] ?? 'start_failed');
  const match = /^started ([0-9]+) ([0-9]+)\n$/.exec(result.stdout.toString('utf8'));
  if (!match) throw new RemoteOperationError('start_unreadable');
  return { pid: Number(match[1]), startTime: match[2]! };
}

function processArgs(procs: { pid: number; startTime: string }[]): string[] {
  if (procs.some((p) => !Number.isSafeInteger(p.pid) || p.pid <= 1 || !START_TIME.test(p.startTime)))
    throw new RemoteOperationError('invalid_process');
  return procs.flatMap((p) => [String(p.pid), p.startTime]);
}

/** For each recorded process (pid AND start time): alive (same start time, not a zombie), and its cwd (null when gone/unreadable). */
export async function remoteProcesses(
  target: SshTarget,
  procs: { pid: number; startTime: string }[],
): Promise<{ alive: boolean; cwd: string | null }[]> {
  if (procs.length === 0) return [];
  const result = await runScript(target, PROCESSES, processArgs(procs));
  const fields = result.stdout.toString('utf8').split('\0');
  if (result.code !== 0 || fields.pop() !== '') throw new RemoteOperationError('processes_unreadable');
  const answers: { alive: boolean; cwd: string | null }[] = [];
  for (let i = 0; i < fields.length;) {
    const state = fields[i++];
    if (state === 'gone') {
      answers.push({ alive: false, cwd: null });
      continue;
    }
    const tag = state === 'alive' ? fields[i++] : undefined;
    if (tag === 'nocwd') answers.push({ alive: true, cwd: null });
    else if (tag === 'cwd' && i < fields.length) answers.push({ alive: true, cwd: fields[i++]! });
    else throw new RemoteOperationError('processes_unreadable');
  }
  if (answers.length !== procs.length) throw new RemoteOperationError('processes_unreadable');
  return answers;
}

/**
 * SIGTERM to the group only if pid still has startTime; up to graceMs for the group to be empty,
 * then SIGKILL. 'gone' when it was not running, 'would_not_stop' when alive after KILL and 2 s.
 */
export async function stopRemoteAgent(
  target: SshTarget,
  a: { pid: number; startTime: string; graceMs: number },
): Promise<'stopped' | 'gone' | 'would_not_stop'> {
  const graceMs = Math.max(0, Math.floor(a.graceMs));
  const result = await runScript(target, STOP_AGENT, [...processArgs([a]), String(graceMs)], {
    timeoutMs: graceMs + 60_000,
  });
  const answer = result.stdout.toString('utf8').trim();
  if (result.code !== 0 || (answer !== 'stopped' && answer !== 'gone' && answer !== 'would_not_stop'))
    throw new RemoteOperationError('stop_failed');
  return answer;
}

/** The status JSON written by the runner, read like executors/host/agent-shim.ts readExitStatus (null when absent or unreadable). */
export async function readRemoteExitStatus(
  target: SshTarget,
  statusPath: string,
): Promise<{ exitCode: number | null; signal: string | null; endedAt: string } | null> {
  const result = await runScript(target, READ_EXIT_STATUS, [absolutePath(statusPath)]);
  // Only a file that is not there means "no outcome written"; one that cannot be read is an error
  // for the caller (never read as the agent having vanished).
  if (result.code === 10) return null;
  if (result.code !== 0) throw new RemoteOperationError('exit_status_unreadable');
  try {
    const parsed = JSON.parse(result.stdout.toString('utf8')) as {
      exitCode?: unknown;
      signal?: unknown;
      endedAt?: unknown;
    };
    return {
      exitCode: typeof parsed.exitCode === 'number' ? parsed.exitCode : null,
      signal: typeof parsed.signal === 'string' ? parsed.signal : null,
      endedAt: String(parsed.endedAt),
    };
  } catch {
    // The runner writes, syncs and renames: a file that is not whole JSON was not written by it.
    throw new RemoteOperationError('exit_status_unreadable');
  }
}

/** Up to maxBytes of the remote log from offset (empty when absent). */
/** A deleted task's run folder on the target (`<runs>/<taskId>`: its agents' logs and exit statuses), as its host logs go. */
export async function removeRemoteTaskRuns(target: SshTarget, a: { runsDir: string; taskId: string }): Promise<void> {
  if (!/^[0-9a-f-]{36}$/.test(a.taskId)) throw new RemoteOperationError('invalid_argument');
  const result = await runScript(target, REMOVE_RUNS, [absolutePath(a.runsDir), a.taskId]);
  if (result.code !== 0 || result.stdout.toString('utf8').trim() !== 'removed')
    throw new RemoteOperationError('remove_failed');
}

export async function readRemoteLog(
  target: SshTarget,
  a: { logPath: string; offset: number; maxBytes: number },
): Promise<Buffer> {
  if (!Number.isSafeInteger(a.offset) || a.offset < 0 || !Number.isSafeInteger(a.maxBytes) || a.maxBytes < 0)
    throw new RemoteOperationError('invalid_argument');
  if (a.maxBytes === 0) return Buffer.alloc(0);
  const result = await runScript(target, READ_LOG, [absolutePath(a.logPath), String(a.offset), String(a.maxBytes)]);
  if (result.code !== 0) throw new RemoteOperationError('log_unreadable');
  return result.stdout;
}

/**
 * What runs on the target under an execution's mark (`TWS_EXECUTION_ID=<id>` in its environment):
 * a start that happened but was never recorded (the worker died between the two) is found by it,
 * never by a guess.
 */
export async function findRemoteMarked(
  target: SshTarget,
  mark: { name: string; value: string },
): Promise<{ leader: { pid: number; startTime: string } | null; pgid: number } | null> {
  if (!ENV_NAME.test(mark.name) || mark.value.includes('\0')) throw new RemoteOperationError('invalid_mark');
  const result = await runScript(target, FIND_MARKED, [`${mark.name}=${mark.value}`]);
  const [kind, a, b] = result.stdout.toString('utf8').trim().split(' ');
  if (result.code !== 0) throw new RemoteOperationError('processes_unreadable');
  if (kind === 'none') return null;
  if (kind === 'leader' && /^[0-9]+$/.test(a ?? '') && START_TIME.test(b ?? ''))
    return { leader: { pid: Number(a), startTime: b! }, pgid: Number(a) };
  if (kind === 'members' && /^[0-9]+$/.test(a ?? '')) return { leader: null, pgid: Number(a) };
  throw new RemoteOperationError('processes_unreadable');
}

/** Stops a whole process group on the target (members of a start whose runner is gone). */
export async function stopRemoteGroup(
  target: SshTarget,
  a: { pgid: number; graceMs: number },
): Promise<'stopped' | 'would_not_stop'> {
  const graceMs = Math.max(0, Math.floor(a.graceMs));
  const result = await runScript(target, STOP_GROUP, [String(a.pgid), String(graceMs)], {
    timeoutMs: graceMs + 60_000,
  });
  const answer = result.stdout.toString('utf8').trim();
  if (result.code !== 0 || (answer !== 'stopped' && answer !== 'would_not_stop'))
    throw new RemoteOperationError('stop_failed');
  return answer;
}

/** How long a remote process (pid and start time) has run, in ms; null when it is gone. */
export async function remoteProcessAgeMs(
  target: SshTarget,
  proc: { pid: number; startTime: string },
): Promise<number | null> {
  const result = await runScript(target, PROCESS_AGE, [String(proc.pid), proc.startTime]);
  const answer = result.stdout.toString('utf8').trim();
  if (result.code !== 0 || !/^(gone|-?[0-9]+)$/.test(answer)) throw new RemoteOperationError('processes_unreadable');
  return answer === 'gone' ? null : Math.max(0, Number(answer));
}

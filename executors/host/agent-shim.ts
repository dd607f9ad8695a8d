/**
 * The agent's supervising parent, as container shims keep a container's exit
 * code for a daemon that restarts: a small C program (native/agent-supervisor.c, compiled by
 * scripts/setup.sh into .tools/agent-supervisor), detached in its own process group, that runs the
 * agent as its child and, when the agent ends, writes how (exit code or signal) to a status file
 * beside the log, durably (write, fsync, rename). It outlives the worker, so an exit while no
 * worker runs is still known afterwards, not guessed. It ignores the group's SIGTERM/SIGINT/SIGHUP
 * (the agent, in the same group, gets them) so that it lives to record the outcome. It replaced a
 * `node -e` shim (kept in bench/node-shim.ts for the comparison) that cost about 7 MB of PSS and
 * 50 ms of CPU to start per agent (bench/supervisor-cost.ts measures both).
 *
 * Its argv is [statusFile, logFile, maxLogBytes, sandboxed, command, ...args]; the agent's output
 * goes through it into the log, kept within maxLogBytes on disk (past half of it, at least 4096
 * bytes, the log becomes `<log>.1` and a new one begins, so the newest output is always kept).
 */
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { typedFailure } from '../support/failures';

/** The checkout: above executors/host/ (run through tsx) or above .build/executors/host/ (compiled). */
function checkoutRoot(): string {
  const up = path.resolve(__dirname, '../..');
  return path.basename(up) === '.build' ? path.dirname(up) : up;
}

/** Where scripts/setup.sh (and the Dockerfile) put the compiled supervisor. */
export const AGENT_SUPERVISOR = path.join(checkoutRoot(), '.tools/agent-supervisor');

/** The one line a host without its supervisor logs: agents are never started unsupervised. */
export const AGENT_SUPERVISOR_MISSING = `the agent supervisor ${AGENT_SUPERVISOR} is missing or not executable: run \`make setup\` (scripts/setup.sh compiles native/agent-supervisor.c); no agent starts on this host until then`;

/**
 * The supervisor binary, or a typed refusal (`internal`, reason `agent_supervisor_missing`) when
 * this checkout has none: fail closed, never an agent without its exit record and log cap.
 */
export async function agentSupervisor(): Promise<string> {
  const present = await access(AGENT_SUPERVISOR, constants.X_OK).then(
    () => true,
    () => false,
  );
  if (!present) throw typedFailure('internal', { reason: 'agent_supervisor_missing' });
  return AGENT_SUPERVISOR;
}

/** The supervisor's `sandboxed` argument: no sandbox, bubblewrap, or bubblewrap whose network it starts with this binary. */
export const shimSandboxArgument = (network: { egressBinary: string | null } | null): string =>
  !network ? '0' : network.egressBinary ? `egress:${network.egressBinary}` : '1';

export interface ExitStatus {
  exitCode: number | null;
  signal: string | null;
  endedAt: string;
  /** The limit that ended it: `memory` when the kernel killed a process of its group at its memory limit. */
  limit?: 'memory' | null;
}

/** The status file of an execution: beside its log. */
export const exitStatusPath = (logPath: string): string => logPath.replace(/\.log$/, '') + '.exit';

/** The recorded outcome, or null when the supervisor wrote none (it was killed, or the agent still runs). */
export async function readExitStatus(logPath: string): Promise<ExitStatus | null> {
  try {
    const parsed = JSON.parse(await readFile(exitStatusPath(logPath), 'utf8')) as Partial<ExitStatus>;
    return {
      exitCode: typeof parsed.exitCode === 'number' ? parsed.exitCode : null,
      signal: typeof parsed.signal === 'string' ? parsed.signal : null,
      endedAt: String(parsed.endedAt),
      limit: parsed.limit === 'memory' ? 'memory' : null,
    };
  } catch {
    return null;
  }
}

/**
 * Whether the command can be started as the system would (execvp): a path with a slash is taken
 * relative to the working directory, a bare name is searched on PATH. Checked before the spawn,
 * so a command that cannot start is refused (400) before anything runs, as it was without a shim.
 */
export async function commandStartable(command: string, cwd: string, pathVar: string | undefined): Promise<boolean> {
  const executable = async (file: string) =>
    access(file, constants.X_OK).then(
      () => true,
      () => false,
    );
  if (command.includes('/')) return executable(path.resolve(cwd, command));
  for (const dir of (pathVar ?? '').split(':').filter(Boolean))
    if (await executable(path.join(dir, command))) return true;
  return false;
}

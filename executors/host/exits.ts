/**
 * Collecting how agents ended. While the process that started an agent runs, its shim's exit is
 * collected at once; otherwise a worker that starts, and the periodic check of each host, find
 * every agent recorded running whose process (pid AND start time: a reused pid has another) is
 * gone, and read the outcome its shim wrote. No outcome written means `vanished`, never a guess.
 * Agents still running are left alone (they are detached).
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { endExecution, findExecution } from '../../db/executions';
import { readFile } from 'node:fs/promises';
import { bringStoreHome } from '../../git/agent-objects-home';
import { readExitStatus } from './agent-shim';
import { isSameProcess } from './process-identity';
import { unwatchAgentRefs, watchAgentRefs } from './ref-moves';

/** The task stores an agent added objects to (git/agent-objects.ts): listed in its run folder when it started in the sandbox. */
export const objectStoresListPath = (logPath: string): string => logPath.replace(/\.log$/, '') + '.objects.json';

/**
 * Brings home what the agent added to its task stores: when it ends, and on each
 * periodic check while it runs, so the user's own git in the worktree sees its commits soon.
 * A failure is logged and left to the next occasion (git status, cleanup and the next check bring home too).
 */
export async function bringAgentObjectsHome(
  logger: Pick<Logger, 'warn'>,
  exec: { id: string; log_path: string },
  gitBinary: string,
): Promise<void> {
  // None listed (an agent started without the sandbox): nothing to bring. One that cannot be read
  // is said; the stores then come home at the next git status or cleanup, which bring them too.
  const listed = await readFile(objectStoresListPath(exec.log_path), 'utf8').catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      logger.warn({ err, executionId: exec.id }, "an agent's task stores could not be listed now");
    return null;
  });
  if (listed === null) return;
  let keyDirs: unknown;
  try {
    keyDirs = JSON.parse(listed);
  } catch {
    return;
  }
  if (!Array.isArray(keyDirs)) return;
  for (const keyDir of keyDirs) {
    if (typeof keyDir !== 'string') continue;
    await bringStoreHome(keyDir, gitBinary).catch((err: unknown) =>
      logger.warn({ err, executionId: exec.id }, "an agent's objects could not be brought home now"),
    );
  }
}

async function collect(
  pool: pg.Pool,
  logger: Logger,
  exec: { id: string; log_path: string },
  gitBinary: string,
): Promise<'exited' | 'vanished' | null> {
  // Before the end is recorded: an ended agent's commits are in the repository's own store.
  unwatchAgentRefs(exec.id);
  await bringAgentObjectsHome(logger, exec, gitBinary);
  const outcome = await readExitStatus(exec.log_path);
  const status = outcome ? 'exited' : 'vanished';
  const ended = await endExecution(pool, exec.id, {
    status,
    exitCode: outcome?.exitCode ?? null,
    signal: outcome?.signal ?? null,
    endedAt: outcome?.endedAt ?? null,
    // Its memory limit ended it (the supervisor read its group's count of kills).
    outcome: outcome?.limit === 'memory' ? 'oom_killed' : null,
  });
  if (!ended) return null;
  logger.info(
    {
      sessionId: ended.sessionId,
      executionId: exec.id,
      status,
      exitCode: outcome?.exitCode ?? null,
      signal: outcome?.signal ?? null,
      ...(outcome?.limit === 'memory' ? { outcome: 'oom_killed' } : {}),
    },
    'agent ended',
  );
  return status;
}

/**
 * The shim of this execution ended while this process watched it. Its row may still be inside the
 * start's transaction for a moment: looked for a few times; the periodic check takes any it misses.
 */
export async function collectExit(
  { pool, logger }: { pool: pg.Pool; logger: Logger },
  executionId: string,
  gitBinary = 'git',
): Promise<void> {
  try {
    for (let tries = 0; tries < 25; tries++) {
      const exec = await findExecution(pool, executionId);
      if (exec) {
        if (exec.status === 'running') await collect(pool, logger, exec, gitBinary);
        return;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (err) {
    logger.warn({ err, executionId }, 'agent exit not collected now; the periodic check will');
  }
}

/** This host's own agents recorded running whose process is gone get their outcome; those alive bring their objects home. */
export async function recoverHostAgents(
  pool: pg.Pool,
  hostId: string,
  logger?: Logger,
  gitBinary = 'git',
): Promise<{ alive: number; exited: number; vanished: number }> {
  const res = await pool.query<{ id: string; pid: number; process_start_time: string; log_path: string }>(
    `SELECT id, pid, process_start_time, log_path FROM executions WHERE host_id = $1 AND status = 'running' AND ssh_target_id IS NULL`,
    [hostId],
  );
  const counts = { alive: 0, exited: 0, vanished: 0 };
  const quiet = logger ?? ({ info() {}, warn() {} } as unknown as Logger);
  for (const exec of res.rows) {
    if (await isSameProcess(exec.pid, exec.process_start_time)) {
      counts.alive++;
      await bringAgentObjectsHome(quiet, exec, gitBinary);
      // Its branch's moves watched here too, where the process that started it is gone.
      await watchAgentBranch(quiet, exec, gitBinary);
      continue;
    }
    const status = await collect(pool, quiet, exec, gitBinary);
    if (status) counts[status]++;
  }
  return counts;
}

/** While an agent runs, its branch's moves bring its objects home at once (executors/host/ref-moves.ts). */
export function watchAgentBranch(
  logger: Logger,
  exec: { id: string; log_path: string },
  gitBinary: string,
): Promise<void> {
  return watchAgentRefs(exec, () => bringAgentObjectsHome(logger, exec, gitBinary), logger);
}

import type pg from 'pg';
import { withClient } from './pool';

/**
 * Serializes git administrative operations on one repository across every process that shares
 * the database: git's own config.lock / index.lock races make parallel `git worktree add` in
 * one repository fail often. Inside one process, callers queue in order (no polling, no
 * connection held while waiting); across processes, a session-level advisory lock is held on
 * one connection for the duration, and a process that finds it taken waits for it on the server
 * (granted the moment its holder releases it: a polling back-off left the lock idle between a
 * release and the next poll, up to 100 ms per hand-over between the gateway and the worker). Only
 * the head of a process's queue waits, on one connection, and for at most WAIT_MS a time, so a
 * connection is never held indefinitely by a wait.
 */
const localQueues = new Map<string, Promise<unknown>>();

/** Where a hold that lasts is reported: every waiter of the repository (here and in other processes) waits for it, silently. */
export interface LockHoldWatch {
  warn(details: { repositoryId: string; heldMs: number }, message: string): void;
  /** How long a hold goes on before it is reported, and again each time as long; a minute unless said. */
  everyMs?: number;
}

export async function withRepositoryLock<T>(
  pool: pg.Pool,
  repositoryId: string,
  fn: () => Promise<T>,
  onWait: () => void = () => {},
  watch?: LockHoldWatch,
): Promise<T> {
  const previous = localQueues.get(repositoryId) ?? Promise.resolve();
  // The turn comes once the previous holder is done, however it ended: its failure is its own
  // caller's (awaited there), not this one's.
  const watched = watch ? () => reportingLongHolds(repositoryId, fn, watch) : fn;
  const mine = previous.catch(() => {}).then(() => withAdvisoryLock(pool, repositoryId, watched, onWait));
  localQueues.set(repositoryId, mine);
  try {
    return await mine;
  } finally {
    if (localQueues.get(repositoryId) === mine) localQueues.delete(repositoryId);
  }
}

const WAIT_MS = 1000;

/**
 * Runs the holder's work and reports, while it lasts, that the lock is still held: a git command
 * that never ends would otherwise hold up every launch and cleanup of the repository without a
 * word (the waiters retry in silence).
 */
async function reportingLongHolds<T>(repositoryId: string, fn: () => Promise<T>, watch: LockHoldWatch): Promise<T> {
  const every = watch.everyMs ?? 60_000;
  const since = Date.now();
  const timer = setInterval(
    () =>
      watch.warn(
        { repositoryId, heldMs: Date.now() - since },
        'the repository lock is still held: every launch and cleanup of this repository waits for it',
      ),
    every,
  );
  timer.unref();
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}

async function withAdvisoryLock<T>(
  pool: pg.Pool,
  repositoryId: string,
  fn: () => Promise<T>,
  onWait: () => void = () => {},
): Promise<T> {
  const key = `repository-git-admin:${repositoryId}`;
  for (;;) {
    // A lock connection that breaks while git works is released broken (withClient): the server
    // dropped the session lock with it, and the pool must not hand that connection out again.
    const outcome = await withClient(pool, async (client, markBroken) => {
      const res = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
        [key],
      );
      if (!res.rows[0]!.locked) {
        onWait();
        if (!(await waitForLock(client, key, markBroken))) return { locked: false as const };
      }
      try {
        return { locked: true as const, value: await fn() };
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]).catch(() => {
          // A broken connection releases its session locks with it.
        });
      }
    });
    if (outcome.locked) return outcome.value;
  }
}

/**
 * Waits on the server for the lock another process holds, at most WAIT_MS: true once it is this
 * session's. The wait is bounded by lock_timeout in a transaction of its own (a session-level
 * advisory lock outlives the transaction it was taken in).
 */
async function waitForLock(client: pg.PoolClient, key: string, markBroken: (err: Error) => void): Promise<boolean> {
  await client.query(`BEGIN; SET LOCAL lock_timeout = '${WAIT_MS}ms'`);
  try {
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
  } catch (err) {
    await client.query('ROLLBACK').catch(markBroken);
    if ((err as { code?: string }).code === '55P03') return false; // lock_not_available: the wait timed out
    throw err;
  }
  try {
    await client.query('COMMIT');
  } catch (err) {
    // The lock is this session's already: a connection in an unknown state is destroyed, and the
    // server releases the lock with it.
    markBroken(err as Error);
    throw err;
  }
  return true;
}

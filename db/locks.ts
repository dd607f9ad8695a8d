import type pg from 'pg';
import { withClient } from './pool';

/**
 * Serializes git administrative operations on one repository across every process that shares
 * the database: git's own config.lock / index.lock races make parallel `git worktree add` in
 * one repository fail often. Inside one process, callers queue in order (no polling, no
 * connection held while waiting); across processes, a session-level advisory lock is held on
 * one connection for the duration, and a process that finds it taken retries with a short back-off.
 */
const localQueues = new Map<string, Promise<unknown>>();

export async function withRepositoryLock<T>(pool: pg.Pool, repositoryId: string, fn: () => Promise<T>, onWait: () => void = () => {}): Promise<T> {
  const previous = localQueues.get(repositoryId) ?? Promise.resolve();
  // The turn comes once the previous holder is done, however it ended: its failure is its own
  // caller's (awaited there), not this one's.
  const mine = previous.catch(() => {}).then(() => withAdvisoryLock(pool, repositoryId, fn, onWait));
  localQueues.set(repositoryId, mine);
  try {
    return await mine;
  } finally {
    if (localQueues.get(repositoryId) === mine) localQueues.delete(repositoryId);
  }
}

async function withAdvisoryLock<T>(
  pool: pg.Pool,
  repositoryId: string,
  fn: () => Promise<T>,
  onWait: () => void = () => {},
): Promise<T> {
  const key = `repository-git-admin:${repositoryId}`;
  for (let attempt = 0; ; attempt++) {
    // A lock connection that breaks while git works is released broken (withClient): the server
    // dropped the session lock with it, and the pool must not hand that connection out again.
    const outcome = await withClient(pool, async (client) => {
      const res = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked', [key]);
      if (!res.rows[0]!.locked) return { locked: false as const };
      try {
        return { locked: true as const, value: await fn() };
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]).catch(() => {
          // A broken connection releases its session locks with it.
        });
      }
    });
    if (outcome.locked) return outcome.value;
    onWait();
    await new Promise((resolve) => setTimeout(resolve, Math.min(10 + attempt * 5, 100) + Math.random() * 10));
  }
}

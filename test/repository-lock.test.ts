/**
 * The per-repository lock across processes: a holder elsewhere (another session of the
 * database, as the worker is to the gateway) keeps every caller here out until it releases,
 * and the lock is then taken without polling; nothing is left locked afterwards.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withRepositoryLock } from '../db/locks';
import { createHarness, type Harness } from './support/harness';
import { waitUntil } from './support/scenario';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

/** Whether a fresh session can take the repository's lock (nothing here still holds it). */
async function isFree(repositoryId: string): Promise<boolean> {
  const client = await h.pool.connect();
  try {
    const key = `repository-git-admin:${repositoryId}`;
    const locked = (
      await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked', [key])
    ).rows[0]!.locked;
    if (locked) await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]);
    return locked;
  } finally {
    client.release();
  }
}

describe('the per-repository lock across processes', () => {
  it('keeps callers out while another session holds it, through waits longer than one bounded wait, and admits them one at a time once it is released', async () => {
    const repositoryId = randomUUID();
    const other = await h.pool.connect(); // the other process's session
    try {
      await other.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`repository-git-admin:${repositoryId}`]);
      const events: string[] = [];
      let inside = 0;
      let waits = 0;
      const callers = [1, 2, 3].map((n) =>
        withRepositoryLock(
          h.pool,
          repositoryId,
          async () => {
            inside++;
            expect(inside).toBe(1);
            events.push(`start ${n}`);
            await new Promise((r) => setTimeout(r, 20));
            events.push(`end ${n}`);
            inside--;
            return n;
          },
          () => waits++,
        ),
      );
      // The first caller waits on the server (the others queue behind it here): a second wait begun
      // means the first (bounded, 1 s) was given up, and still nobody ran.
      await waitUntil(async () => waits >= 2, 'a bounded wait on the server given up, and another begun');
      expect(events).toEqual([]);
      await other.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [`repository-git-admin:${repositoryId}`]);
      expect(await Promise.all(callers)).toEqual([1, 2, 3]);
      expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
    } finally {
      other.release();
    }
    expect(await isFree(repositoryId)).toBe(true);
  });

  it('is not taken by a caller here while another session holds it, even when the caller waited on the server and then gave up', async () => {
    const repositoryId = randomUUID();
    const key = `repository-git-admin:${repositoryId}`;
    const other = await h.pool.connect();
    try {
      await other.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
      let ran = false;
      let waits = 0;
      const caller = withRepositoryLock(
        h.pool,
        repositoryId,
        async () => {
          ran = true;
          // While this runs, the lock is this caller's: the other session cannot take it.
          expect(
            (
              await other.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked', [
                key,
              ])
            ).rows[0]!.locked,
          ).toBe(false);
        },
        () => waits++,
      );
      // A second wait begun: the first (bounded, 1 s) was given up.
      await waitUntil(async () => waits >= 2, 'a bounded wait on the server given up, and another begun');
      expect(ran).toBe(false);
      await other.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]);
      await caller;
      expect(ran).toBe(true);
    } finally {
      other.release();
    }
    expect(await isFree(repositoryId)).toBe(true);
  });
  it("says while it is held past the watch's interval, with the repository and how long, and stops saying it once released", async () => {
    const repositoryId = randomUUID();
    const reports: { repositoryId: string; heldMs: number }[] = [];
    const watch = {
      everyMs: 200,
      warn: (details: { repositoryId: string; heldMs: number }) => void reports.push(details),
    };
    await withRepositoryLock(h.pool, repositoryId, () => new Promise((r) => setTimeout(r, 700)), undefined, watch);
    expect(reports.length).toBeGreaterThanOrEqual(2);
    expect(reports.every((r) => r.repositoryId === repositoryId)).toBe(true);
    expect(reports.map((r) => r.heldMs)).toEqual([...reports.map((r) => r.heldMs)].sort((a, b) => a - b));
    expect(reports[0]!.heldMs).toBeGreaterThanOrEqual(190);
    const count = reports.length;
    await withRepositoryLock(h.pool, repositoryId, async () => {}, undefined, watch); // a short hold says nothing
    await new Promise((r) => setTimeout(r, 500));
    expect(reports.length).toBe(count);
    expect(await isFree(repositoryId)).toBe(true);
  });
});

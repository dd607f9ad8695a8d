/**
 * Merging under faults [R8.3]: merges racing into one base, and the checkout of the base
 * following a merge.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness';
import { finish, read, reflogLength, taskWithCommits } from './support/finishing';
import { expectSafeError } from './support/scenario';
import { commitOf, git } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe('merges racing into one base', () => {
  it('two tasks changing the same lines at the same moment: exactly one lands, the other is a 409 merge_conflict', async () => {
    const a = await taskWithCommits(h, 'race-overlap', [{ 'README.md': 'task a was here\n' }]);
    const b = await taskWithCommits(h, 'race-overlap-b', [{ 'README.md': 'task b was here\n' }], {
      repo: { path: a.repo, id: a.repoId },
    });
    const original = commitOf(a.repo, 'main');
    const moves = reflogLength(a.repo, 'main');

    const answers = await Promise.all([
      finish(h, 'POST', `/v1/tasks/${a.taskId}/merge`, { strategy: 'squash' }),
      finish(h, 'POST', `/v1/tasks/${b.taskId}/merge`, { strategy: 'squash' }),
    ]);
    const won = answers.findIndex((r) => r.status === 200);
    expect(answers.map((r) => r.status).sort(), JSON.stringify(answers.map((r) => r.body))).toEqual([200, 409]);
    const winner = answers[won]!;
    const loser = answers[1 - won]!;
    expect(winner.body.state).toBe('merged');
    expectSafeError(loser.body, 'merge_conflict', [a.repo]);
    expect(loser.body.error.conflicts).toEqual([{ repositoryId: a.repoId, paths: ['README.md'] }]);
    expect(winner.body.repositories[0]).toMatchObject({ before: original, after: commitOf(a.repo, 'main') });
    expect(reflogLength(a.repo, 'main')).toBe(moves + 1);
    expect(git(a.repo, 'show', 'main:README.md')).toBe(won === 0 ? 'task a was here' : 'task b was here');
    expect(read(a.repo, 'README.md')).toBe(won === 0 ? 'task a was here\n' : 'task b was here\n');
  });

  it('the checkout of the base follows a merge of a file whose index entry is stale (the checkout was chowned)', async () => {
    const w = await taskWithCommits(h, 'stale-index', [{ 'README.md': 'the task says\n' }]);
    // makeRepo chowns the checkout after its commit: every index entry's ctime is older than its file's.
    const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(git(w.repo, 'show', 'main:README.md')).toBe('the task says');
    expect(read(w.repo, 'README.md')).toBe('the task says\n');
    expect(git(w.repo, 'status', '--porcelain')).toBe('');
  });
});

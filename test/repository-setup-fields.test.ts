/**
 * A repository's new-workspace preparation fields: `setup` (an argv run once in each new workspace
 * before its first agent), `copyFiles` (patterns of files copied from the source checkout) and
 * `setupFailure` (`warn` | `refuse`), set at registration and by PATCH beside `rebuildable`, shown
 * by every answer that shows a repository, each checked so a bad one is a 400 that names it and
 * changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preparationSettings } from '../db/workspace-preparations';
import { COPY_FILES_LIMITS, SETUP_LIMITS } from '../domain/workspace-setup';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { makeRepo, rowCounts } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const MISSING = '00000000-0000-4000-8000-000000000000';

/** The repository's row as stored: what a refused request must leave as it was. */
async function rowOf(id: string) {
  const res = await h.pool.query(
    'SELECT name, path, default_branch, host_id, rebuildable, setup, copy_files, setup_failure FROM repositories WHERE id = $1',
    [id],
  );
  return res.rows[0];
}

const listed = async (id: string) =>
  (await h.api('GET', '/v1/repositories?limit=200')).body.items.find((x: { id: string }) => x.id === id);

async function register(fields: Record<string, unknown> = {}) {
  const name = `setup-fields-${++n}`;
  const dir = makeRepo(h.scratch, name);
  const res = await h.api('POST', '/v1/repositories', { name, path: dir, ...fields }, OPERATOR_TOKEN);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as Record<string, any> & { id: string };
}

describe('setup, copyFiles and setupFailure of a repository', () => {
  it('are set at registration and shown by the answer and the list', async () => {
    const made = await register({
      setup: ['npm', 'ci', '--ignore-scripts'],
      copyFiles: ['.env', 'config/local.*.json', '**/.env.local', '.env'],
      setupFailure: 'refuse',
    });
    expect(made).toMatchObject({
      setup: ['npm', 'ci', '--ignore-scripts'],
      copyFiles: ['.env', 'config/local.*.json', '**/.env.local'],
      setupFailure: 'refuse',
      rebuildableDefault: true,
    });
    expect(await listed(made.id)).toEqual(made);
    expect(await rowOf(made.id)).toMatchObject({
      setup: ['npm', 'ci', '--ignore-scripts'],
      copy_files: ['.env', 'config/local.*.json', '**/.env.local'],
      setup_failure: 'refuse',
    });
    expect((await preparationSettings(h.pool, [made.id, MISSING])).get(made.id)).toEqual({
      setup: ['npm', 'ci', '--ignore-scripts'],
      copyFiles: ['.env', 'config/local.*.json', '**/.env.local'],
      setupFailure: 'refuse',
    });
  });

  it('default to none and warn', async () => {
    const made = await register();
    expect(made).toMatchObject({ setup: null, copyFiles: [], setupFailure: 'warn' });
    expect(await listed(made.id)).toEqual(made);
    expect(await rowOf(made.id)).toMatchObject({ setup: null, copy_files: null, setup_failure: 'warn' });
    // Nothing to prepare: a materialization reads it as none.
    expect((await preparationSettings(h.pool, [made.id, MISSING])).size).toBe(0);
  });

  it('change by PATCH one at a time, the others (rebuildable too) left as they are', async () => {
    const made = await register({ rebuildable: ['dist/'] });
    const patch = async (body: Record<string, unknown>) => {
      const res = await h.api('PATCH', `/v1/repositories/${made.id}`, body, OPERATOR_TOKEN);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(await listed(made.id)).toEqual(res.body);
      return res.body;
    };
    expect(await patch({ setup: ['make', 'deps'] })).toMatchObject({
      setup: ['make', 'deps'],
      copyFiles: [],
      setupFailure: 'warn',
      rebuildable: ['dist/'],
      rebuildableDefault: false,
    });
    expect(await patch({ copyFiles: ['.env'] })).toMatchObject({
      setup: ['make', 'deps'],
      copyFiles: ['.env'],
      setupFailure: 'warn',
      rebuildable: ['dist/'],
    });
    expect(await patch({ setupFailure: 'refuse' })).toMatchObject({
      setup: ['make', 'deps'],
      copyFiles: ['.env'],
      setupFailure: 'refuse',
      rebuildable: ['dist/'],
    });
    // Only rebuildable, as before these fields: the others stay.
    expect(await patch({ rebuildable: ['target/'] })).toMatchObject({
      setup: ['make', 'deps'],
      copyFiles: ['.env'],
      setupFailure: 'refuse',
      rebuildable: ['target/'],
      rebuildableDefault: false,
    });
    // An empty body changes nothing and answers the repository.
    const before = await rowOf(made.id);
    const same = await patch({});
    expect(same).toMatchObject({ setup: ['make', 'deps'], copyFiles: ['.env'], setupFailure: 'refuse' });
    expect(await rowOf(made.id)).toEqual(before);
    // Several at once; an argv item may be empty (only the command may not).
    expect(
      await patch({ setup: ['sh', '-c', ''], copyFiles: ['a/*.json', 'b/**/c'], setupFailure: 'warn' }),
    ).toMatchObject({
      setup: ['sh', '-c', ''],
      copyFiles: ['a/*.json', 'b/**/c'],
      setupFailure: 'warn',
      rebuildable: ['target/'],
    });
    // rebuildable null is still the default list, and leaves the others.
    const reset = await patch({ rebuildable: null });
    expect(reset).toMatchObject({
      rebuildableDefault: true,
      setup: ['sh', '-c', ''],
      copyFiles: ['a/*.json', 'b/**/c'],
    });
    expect(reset.rebuildable).toContain('node_modules/');
    expect((await preparationSettings(h.pool, [made.id])).get(made.id)).toEqual({
      setup: ['sh', '-c', ''],
      copyFiles: ['a/*.json', 'b/**/c'],
      setupFailure: 'warn',
    });
  });

  it('null removes setup and copyFiles; an empty copyFiles is none', async () => {
    const made = await register({ setup: ['make'], copyFiles: ['.env'], setupFailure: 'refuse' });
    const removed = await h.api(
      'PATCH',
      `/v1/repositories/${made.id}`,
      { setup: null, copyFiles: null },
      OPERATOR_TOKEN,
    );
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body).toMatchObject({ setup: null, copyFiles: [], setupFailure: 'refuse' });
    expect(await rowOf(made.id)).toMatchObject({ setup: null, copy_files: null, setup_failure: 'refuse' });
    expect(await listed(made.id)).toEqual(removed.body);

    await h.api('PATCH', `/v1/repositories/${made.id}`, { copyFiles: ['.env'] }, OPERATOR_TOKEN);
    const emptied = await h.api('PATCH', `/v1/repositories/${made.id}`, { copyFiles: [] }, OPERATOR_TOKEN);
    expect(emptied.body.copyFiles).toEqual([]);
    expect((await rowOf(made.id)).copy_files).toBeNull();
  });

  it('a bad field is a 400 that names it, and changes nothing', async () => {
    const made = await register({ setup: ['make'], copyFiles: ['.env'], rebuildable: ['dist/'] });
    const before = await rowOf(made.id);
    const counts = await rowCounts(h.pool);
    const tooLong = 'x'.repeat(COPY_FILES_LIMITS.length + 1);
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{ copyFiles: ['.env', 'ok', '../x'] }, /^copyFiles\/2 may not contain "\." or "\.\." segments\.$/],
      [{ copyFiles: ['/abs'] }, /^copyFiles\/0 .*leading "\/"/],
      [{ copyFiles: ['a//b'] }, /^copyFiles\/0 may not contain an empty segment/],
      [{ copyFiles: ['.git/config'] }, /^copyFiles\/0 may not name the \.git folder/],
      [{ copyFiles: ['**'] }, /^copyFiles\/0 would copy everything/],
      [{ copyFiles: [''] }, /^copyFiles\[0\] must have at least 1 character/],
      [{ copyFiles: [tooLong] }, /^copyFiles\[0\] must have at most 200 characters/],
      [
        { copyFiles: Array.from({ length: COPY_FILES_LIMITS.patterns + 1 }, (_, i) => `f${i}`) },
        /^copyFiles must have at most 100 items/,
      ],
      [{ copyFiles: 'x' }, /^copyFiles /],
      [{ setup: [] }, /^setup must have 1 to 100 items\.$/],
      [{ setup: Array.from({ length: SETUP_LIMITS.items + 1 }, () => 'a') }, /^setup must have at most 100 items/],
      [{ setup: ['', 'x'] }, /^setup must name a command first\.$/],
      [{ setup: [1] }, /^setup/],
      [{ setup: 'make' }, /^setup /],
      [{ setupFailure: 'fail' }, /^setupFailure must be one of warn, refuse/],
      [{ setupFailure: null }, /^setupFailure /],
      // A bad field beside good ones: the good ones do not change either.
      [{ setupFailure: 'refuse', setup: ['ok'], copyFiles: ['../x'] }, /^copyFiles\/0 /],
      [{ rebuildable: ['x'], setup: [] }, /^setup /],
      [{ copyFiles: ['.env.local'], rebuildable: ['../up'] }, /^rebuildable\/0 /],
      [{ setup_failure: 'warn' }, /^setup_failure is not a field of this request/],
    ];
    for (const [body, message] of refusals) {
      const refused = await h.api('PATCH', `/v1/repositories/${made.id}`, body, OPERATOR_TOKEN);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error.code).toBe('invalid_request');
      expect(refused.body.error.message, JSON.stringify(body)).toMatch(message);
      expect(await rowOf(made.id), JSON.stringify(body)).toEqual(before);
    }
    // At registration too: refused before anything is made.
    for (const [body, message] of refusals) {
      const refused = await h.api(
        'POST',
        '/v1/repositories',
        { name: `refused-${++n}`, path: makeRepo(h.scratch, `refused-${n}`), ...body },
        OPERATOR_TOKEN,
      );
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error.code).toBe('invalid_request');
      expect(refused.body.error.message, JSON.stringify(body)).toMatch(message);
    }
    expect(await rowCounts(h.pool)).toEqual(counts);
    expect(await rowOf(made.id)).toEqual(before);
  });

  it('a repository that does not exist is a 404, an empty body too', async () => {
    for (const body of [{}, { setup: ['make'] }, { setupFailure: 'refuse' }, { copyFiles: null }]) {
      const res = await h.api('PATCH', `/v1/repositories/${MISSING}`, body, OPERATOR_TOKEN);
      expect(res.status, JSON.stringify(body)).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('are an operator’s to set, rebuildable too: a user token naming any is a 403 that changes nothing', async () => {
    const made = await register({ setup: ['make'] });
    const before = await rowOf(made.id);
    const counts = await rowCounts(h.pool);
    // rebuildable names ignored files an idle release drops unsaved: the operator's too.
    const bodies = [{ setup: null }, { copyFiles: ['.env'] }, { setupFailure: 'refuse' }];
    for (const body of [...bodies, { rebuildable: ['*.env', 'notes/'] }, { rebuildable: null }]) {
      const patched = await h.api('PATCH', `/v1/repositories/${made.id}`, body, USER_TOKEN);
      expect(patched.status, JSON.stringify(patched.body)).toBe(403);
      expect(patched.body.error.code).toBe('forbidden');
    }
    for (const fields of [{ copyFiles: ['.env'] }, { rebuildable: ['*.env'] }]) {
      const posted = await h.api(
        'POST',
        '/v1/repositories',
        { name: `user-${++n}`, path: makeRepo(h.scratch, `user-${n}`), ...fields },
        USER_TOKEN,
      );
      expect(posted.status, JSON.stringify(fields)).toBe(403);
    }
    expect(await rowOf(made.id)).toEqual(before);
    expect(await rowCounts(h.pool)).toEqual(counts);
    // A user may still register a plain repository; the operator sets the list.
    const plain = await h.api(
      'POST',
      '/v1/repositories',
      { name: `user-${++n}`, path: makeRepo(h.scratch, `user-${n}`) },
      USER_TOKEN,
    );
    expect(plain.status, JSON.stringify(plain.body)).toBe(201);
    const byOperator = await h.api('PATCH', `/v1/repositories/${made.id}`, { rebuildable: ['dist/'] }, OPERATOR_TOKEN);
    expect(byOperator.status).toBe(200);
    expect((await rowOf(made.id)).rebuildable).toEqual(['dist/']);
  });

  it('need a token as before: none is a 401 that changes nothing', async () => {
    const made = await register({ setup: ['make'] });
    const before = await rowOf(made.id);
    const counts = await rowCounts(h.pool);
    const patched = await h.api('PATCH', `/v1/repositories/${made.id}`, { setup: null }, null);
    expect(patched.status).toBe(401);
    const posted = await h.api(
      'POST',
      '/v1/repositories',
      { name: `anon-${++n}`, path: makeRepo(h.scratch, `anon-${n}`), setup: ['make'] },
      null,
    );
    expect(posted.status).toBe(401);
    expect(await rowOf(made.id)).toEqual(before);
    expect(await rowCounts(h.pool)).toEqual(counts);
  });
});

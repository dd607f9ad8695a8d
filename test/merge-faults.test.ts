/**
 * Merging under faults [R8.3]: several repositories all or nothing, merges racing into one base
 * and a base moved under a merge, a request sent twice, the gateway killed while its request
 * waits, and hostile content (planted hooks, drivers and filters; hostile file and branch names).
 * The worker, Temporal and PostgreSQL killed in the middle of a merge: merge-restarts.test.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskDirName } from '../domain/task-layout';
import { createHarness, USER_TOKEN, type Harness } from './support/harness';
import { commitIn, finish, mergedTree, read, reflogLength, taskWithCommits } from './support/finishing';
import {
  basesOf,
  expectMovedOnce,
  killed,
  newestMergeOf,
  pausingGit,
  settledMerge,
  taskOnRepositories,
  type PausingGit,
} from './support/merge-faults';
import { agentEnded, createTask, expectSafeError, launch, registerRepo } from './support/scenario';
import { commitOf, git, makeRepo } from './support/world';

let h: Harness;
let paused: PausingGit;
const spawned: ChildProcess[] = [];

beforeAll(async () => {
  h = await createHarness({}, { inProcessWorker: false });
  paused = pausingGit(h.scratch);
  // The worker as its own process, with the pausing git.
  spawned.push(h.spawnWorker({ TWS_GIT_BINARY: paused.binary }));
}, 60_000);

afterAll(async () => {
  for (const child of spawned) await killed(child);
  await h?.close();
});

describe('several repositories: all or nothing', () => {
  it('a conflict in the third repository refuses the merge naming only its file, and no base moves', async () => {
    const t = await taskOnRepositories(h, 'all-or-nothing', [
      { 'one.txt': 'one\n' },
      { 'two.txt': 'two\n' },
      { 'README.md': 'the task says\n' },
    ]);
    commitIn(t.repos[2]!.dir, { 'README.md': 'main says\n' }, 'main moved');
    const before = basesOf(t.repos);
    const refs = t.repos.map((r) => git(r.dir, 'for-each-ref'));

    const res = await finish(h, 'POST', `/v1/tasks/${t.taskId}/merge`, { strategy: 'squash' });
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expectSafeError(
      res.body,
      'merge_conflict',
      t.repos.map((r) => r.dir),
    );
    expect(res.body.error.conflicts).toEqual([{ repositoryId: t.repos[2]!.id, paths: ['README.md'] }]);
    expect(basesOf(t.repos)).toEqual(before);
    expect(t.repos.map((r) => git(r.dir, 'for-each-ref'))).toEqual(refs);
    const [merge] = (await h.api('GET', `/v1/tasks/${t.taskId}/merges`)).body.items;
    expect(merge).toMatchObject({ state: 'refused', error: { code: 'merge_conflict' } });
  });
});

describe('merges racing into one base', () => {
  it('two tasks merged at the same moment with separate files both land, one after the other', async () => {
    const a = await taskWithCommits(h, 'race-clean', [{ 'a.txt': 'from a\n' }]);
    const b = await taskWithCommits(h, 'race-clean-b', [{ 'b.txt': 'from b\n' }], {
      repo: { path: a.repo, id: a.repoId },
    });
    const original = commitOf(a.repo, 'main');
    const moves = reflogLength(a.repo, 'main');

    const [ra, rb] = await Promise.all([
      finish(h, 'POST', `/v1/tasks/${a.taskId}/merge`, { strategy: 'squash' }),
      finish(h, 'POST', `/v1/tasks/${b.taskId}/merge`, { strategy: 'squash' }),
    ]);
    expect(ra.status, JSON.stringify(ra.body)).toBe(200);
    expect(rb.status, JSON.stringify(rb.body)).toBe(200);
    expect([ra.body.state, rb.body.state]).toEqual(['merged', 'merged']);
    const [ma] = ra.body.repositories;
    const [mb] = rb.body.repositories;
    // One after the other: the later one moved the base from where the earlier one left it.
    const [first, second] = ma.before === original ? [ma, mb] : [mb, ma];
    expect(first.before).toBe(original);
    expect(second.before).toBe(first.after);
    expect(commitOf(a.repo, 'main')).toBe(second.after);
    expect(git(a.repo, 'rev-list', '--first-parent', 'main').split('\n').slice(0, 3)).toEqual([
      second.after,
      first.after,
      original,
    ]);
    expect(reflogLength(a.repo, 'main')).toBe(moves + 2);
    expect(git(a.repo, 'show', 'main:a.txt')).toBe('from a');
    expect(git(a.repo, 'show', 'main:b.txt')).toBe('from b');
    expect(read(a.repo, 'a.txt')).toBe('from a\n');
    expect(read(a.repo, 'b.txt')).toBe('from b\n');
  });

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

  it('a base moved by its owner after the preview and while the merge plans lands under the merge, never overwritten', async () => {
    const w = await taskWithCommits(h, 'moved-under', [{ 'a.txt': 'a\n' }]);
    const preview = await finish(h, 'GET', `/v1/tasks/${w.taskId}/merge-preview?strategy=squash`);
    expect(preview.body.repositories).toEqual([{ repositoryId: w.repoId, outcome: 'clean' }]);
    const original = commitOf(w.repo, 'main');

    // The merge's first move is held; meanwhile the owner commits on the base in its checkout.
    paused.arm(['moved-under-1']);
    const pending = finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    try {
      await paused.pausedAt('moved-under-1');
      const owners = commitIn(w.repo, { 'owner.txt': "the owner's\n" }, "the owner's commit");
      paused.release('moved-under-1');
      const res = await pending;
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const [merged] = res.body.repositories;
      expect(merged.before).toBe(owners);
      expect(commitOf(w.repo, 'main')).toBe(merged.after);
      expect(git(w.repo, 'rev-parse', 'main~1')).toBe(owners);
      expect(git(w.repo, 'rev-parse', 'main~2')).toBe(original);
      expect(git(w.repo, 'show', 'main:owner.txt')).toBe("the owner's");
      expect(git(w.repo, 'show', 'main:a.txt')).toBe('a');
      expect(read(w.repo, 'a.txt')).toBe('a\n');
      // The recorded plan is the one that moved the base.
      const row = (
        await h.pool.query('SELECT plan FROM git_operations WHERE operation_id = $1', [res.body.operationId])
      ).rows[0];
      expect(row.plan).toMatchObject([{ before: owners, after: merged.after }]);
    } finally {
      paused.disarm();
      await pending.catch(() => {});
    }
  });
});

describe('a retried request', () => {
  it('the same merge sent twice at once with one Idempotency-Key is one operation; the base moves once', async () => {
    const w = await taskWithCommits(h, 'same-key', [{ 'a.txt': 'a\n' }]);
    const moves = reflogLength(w.repo, 'main');
    const key = randomUUID();
    const [one, two] = await Promise.all(
      [0, 1].map(() =>
        finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'merge' }, { 'idempotency-key': key }),
      ),
    );
    expect(one!.status, JSON.stringify(one!.body)).toBe(200);
    expect(two!.status, JSON.stringify(two!.body)).toBe(200);
    expect(one!.body.operationId).toBe(two!.body.operationId);
    expect(one!.body.state).toBe('merged');
    expect(two!.body.repositories).toEqual(one!.body.repositories);
    expect(reflogLength(w.repo, 'main')).toBe(moves + 1);
    expect((await h.api('GET', `/v1/tasks/${w.taskId}/merges`)).body.items).toHaveLength(1);
    // Later too: the key's answer is that merge, nothing moves again.
    const later = await finish(
      h,
      'POST',
      `/v1/tasks/${w.taskId}/merge`,
      { strategy: 'merge' },
      { 'idempotency-key': key },
    );
    expect(later.status).toBe(200);
    expect(later.body.operationId).toBe(one!.body.operationId);
    expect(reflogLength(w.repo, 'main')).toBe(moves + 1);
  });
});

describe('the gateway killed mid-merge', () => {
  it('the gateway killed while its merge request waits: the merge ends once, as another gateway shows', async () => {
    const t = await taskOnRepositories(h, 'gateway-killed', [{ 'one.txt': '1\n' }, { 'two.txt': '2\n' }]);
    const before = basesOf(t.repos);
    const trees = t.repos.map((r) => mergedTree(r.dir, t.branch));
    const gateway = await h.spawnGateway({ TWS_GIT_BINARY: paused.binary });
    spawned.push(gateway.child);
    paused.arm(['gateway-killed-2-1']);
    try {
      const asked = fetch(`${gateway.url}/v1/tasks/${t.taskId}/merge`, {
        method: 'POST',
        headers: { authorization: `Bearer ${USER_TOKEN}`, prefer: 'wait', 'content-type': 'application/json' },
        body: JSON.stringify({ strategy: 'merge' }),
      }).then(
        (res) => res.status,
        (err: Error) => err,
      );
      await paused.pausedAt('gateway-killed-2-1');
      expect(basesOf(t.repos).map((b, i) => b.commit !== before[i]!.commit)).toEqual([true, false]);
      await killed(gateway.child);
      expect(await asked).toBeInstanceOf(Error); // the answer is lost with its gateway
      paused.release('gateway-killed-2-1');

      const operationId = await newestMergeOf(h, t.taskId);
      const merge = await settledMerge(h.baseUrl, operationId);
      expect(merge.state, JSON.stringify(merge)).toBe('merged');
      expect(merge.repositories.map((r: any) => r.repositoryId)).toEqual(t.repos.map((r) => r.id));
      t.repos.forEach((r, i) => expectMovedOnce(r, before[i]!, merge.repositories[i], trees[i]!));
      expect((await h.api('GET', `/v1/tasks/${t.taskId}/merges`)).body.items).toHaveLength(1);
    } finally {
      paused.disarm();
    }
  });
});

const NOTES = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
const notes = (change: Record<number, string>): string => NOTES.map((line, i) => change[i] ?? line).join('\n') + '\n';

/** A program that, should it ever run, leaves a marker file (the folder is writable by every uid: a checkout's owner runs some of git). */
const planted = (markers: string, name: string): string => `touch '${path.join(markers, name)}'`;

function plantHooks(hooksDir: string, markers: string, where: string): void {
  mkdirSync(hooksDir, { recursive: true });
  for (const hook of [
    'pre-commit',
    'commit-msg',
    'post-commit',
    'post-merge',
    'post-checkout',
    'post-rewrite',
    'reference-transaction',
    'post-index-change',
  ]) {
    writeFileSync(path.join(hooksDir, hook), `#!/bin/sh\n${planted(markers, `hook-${hook}-${where}`)}\nexit 0\n`);
    chmodSync(path.join(hooksDir, hook), 0o755);
  }
}

/** Drivers and programs a config file may name, each leaving its marker should git run it. */
function plantConfig(file: string, markers: string, where: string): void {
  const cmd = (name: string) => JSON.stringify(`${planted(markers, `${name}-${where}`)}; cat`);
  writeFileSync(
    file,
    `${existsSync(file) ? readFileSync(file, 'utf8') : ''}
[merge "evil"]
\tname = evil
\tdriver = ${JSON.stringify(`${planted(markers, `merge-driver-${where}`)}; exit 0`)}
[filter "evil"]
\tclean = ${cmd('filter-clean')}
\tsmudge = ${cmd('filter-smudge')}
\tprocess = ${JSON.stringify(planted(markers, `filter-process-${where}`))}
\trequired = true
[diff "evil"]
\ttextconv = ${cmd('diff-textconv')}
\tcommand = ${JSON.stringify(planted(markers, `diff-command-${where}`))}
[core]
\tfsmonitor = ${JSON.stringify(planted(markers, `fsmonitor-${where}`))}
\thooksPath = ${path.join(markers, `hooks-path-${where}`)}
`,
  );
}

describe('hostile content', () => {
  it('planted hooks, a merge driver and filters never run; the .txt merges as git’s own text merge', async () => {
    const markers = path.join(h.scratch, 'markers');
    mkdirSync(markers, { mode: 0o777 });
    chmodSync(markers, 0o777);
    const attributes = '*.txt merge=evil filter=evil diff=evil\n';
    const w = await taskWithCommits(h, 'hostile-drivers', [{ 'notes.txt': notes({ 1: 'two, as the task says' }) }], {
      files: { '.gitattributes': attributes, 'notes.txt': notes({}) },
    });
    commitIn(w.repo, { 'notes.txt': notes({ 8: 'nine, as the owner says' }) }, "the owner's change");
    const before = { commit: commitOf(w.repo, 'main'), moves: reflogLength(w.repo, 'main') };

    // Planted once every commit of the test is made (the test's own git would run them).
    const registration = git(w.worktree, 'rev-parse', '--absolute-git-dir');
    plantHooks(path.join(w.repo, '.git', 'hooks'), markers, 'source');
    plantHooks(path.join(registration, 'hooks'), markers, 'registration');
    plantHooks(path.join(markers, 'hooks-path-source'), markers, 'hooks-path');
    git(w.repo, 'config', 'core.repositoryformatversion', '1');
    git(w.repo, 'config', 'extensions.worktreeConfig', 'true');
    plantConfig(path.join(w.repo, '.git', 'config'), markers, 'source');
    plantConfig(path.join(w.repo, '.git', 'config.worktree'), markers, 'source-worktree');
    plantConfig(path.join(registration, 'config.worktree'), markers, 'registration');

    const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const merged = notes({ 1: 'two, as the task says', 8: 'nine, as the owner says' });
    expect(res.body.repositories[0]).toMatchObject({ before: before.commit, after: commitOf(w.repo, 'main') });
    expect(git(w.repo, 'cat-file', 'blob', 'main:notes.txt') + '\n').toBe(merged);
    expect(read(w.repo, 'notes.txt')).toBe(merged); // the checkout followed, no smudge filter between
    expect(git(w.repo, 'cat-file', 'blob', 'main:.gitattributes') + '\n').toBe(attributes);
    expect(reflogLength(w.repo, 'main')).toBe(before.moves + 1);
    expect(readdirSync(markers).filter((f) => !f.startsWith('hooks-path-'))).toEqual([]);
  });

  it('files named -rf, with a newline and in unicode merge cleanly into a base named like a shell command; a conflict names each exactly', async () => {
    const markers = path.join(h.scratch, 'name-markers');
    mkdirSync(markers, { mode: 0o777 });
    chmodSync(markers, 0o777);
    const base = `rel/$(touch\${IFS}${markers}/branch);'q"-ünï`;
    const names = ['-rf', 'line\nbreak.txt', 'ünïcødé ✓ names.txt'];
    const repo = makeRepo(h.scratch, 'hostile-names');
    git(repo, 'branch', base);
    const repoId = await registerRepo(h, repo, 'hostile-names');
    const tasks = [];
    for (const who of ['first', 'second']) {
      const taskId = await createTask(h, [{ repositoryId: repoId, baseBranch: base }], { title: `names ${who}` });
      const launched = await launch(h, taskId, { command: ['true'] });
      expect(launched.status, JSON.stringify(launched.body)).toBe(201);
      await agentEnded(h, launched.body.sessionId);
      const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'hostile-names');
      commitIn(worktree, Object.fromEntries(names.map((n) => [n, `${who} wrote ${n}\n`])));
      tasks.push(taskId);
    }
    const before = { commit: commitOf(repo, base), moves: reflogLength(repo, base), main: commitOf(repo, 'main') };

    const first = await finish(h, 'POST', `/v1/tasks/${tasks[0]}/merge`, { strategy: 'merge' });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.repositories).toEqual([
      { repositoryId: repoId, baseBranch: base, before: before.commit, after: commitOf(repo, base) },
    ]);
    const tree = git(repo, 'ls-tree', '-z', '--name-only', base).split('\0').filter(Boolean).sort();
    expect(tree).toEqual(['README.md', ...names].sort());
    for (const n of names)
      expect(git(repo, 'cat-file', 'blob', `${commitOf(repo, base)}:${n}`)).toBe(`first wrote ${n}`);
    expect(reflogLength(repo, base)).toBe(before.moves + 1);
    expect(commitOf(repo, 'main')).toBe(before.main);

    const second = await finish(h, 'POST', `/v1/tasks/${tasks[1]}/merge`, { strategy: 'merge' });
    expect(second.status, JSON.stringify(second.body)).toBe(409);
    expectSafeError(second.body, 'merge_conflict', [repo]);
    expect(second.body.error.conflicts).toHaveLength(1);
    expect(second.body.error.conflicts[0].repositoryId).toBe(repoId);
    expect([...second.body.error.conflicts[0].paths].sort()).toEqual([...names].sort());
    expect(reflogLength(repo, base)).toBe(before.moves + 1);
    expect(readdirSync(markers)).toEqual([]);
  });
});

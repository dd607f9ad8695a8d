/**
 * A task's diff [R8.1]: what an agent committed on the task branch since its merge base, then what
 * it left uncommitted (changes and untracked files), with renames, binaries and hostile names read
 * exactly; cut at the configured limits; read without changing the worktree's index or any ref,
 * without running a diff driver a file's attributes name; and still there once the task is
 * archived or released.
 */
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { archive, releaseIdleTask, waitForJob } from './support/cleanup';
import { run as tws } from '../client/cli/cli';
import { CliError, EXIT } from '../client/cli/cli-io';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { agentEnded, createTask, expectSafeError, launch, registerRepo } from './support/scenario';
import { commitOf, git, makeRepo } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const PWNED = `/tmp/tws-diff-pwned-${process.pid}`;
const HOSTILE = '-odd "name"\nwith newline é.txt';

/** The agent's work: two commits on the task branch, then changes left uncommitted and untracked files. */
const AGENT_SCRIPT = String.raw`
set -e
g() { git -c user.name=agent -c user.email=agent@example.com "$@"; }
printf 'one\ntwo\nthree\n' > added.txt
printf 'changed\n' >> README.md
g mv moved-from.txt moved-to.txt
rm gone.txt
printf '\000\001\002binary' > blob.bin
printf 'plain\nchange\n' > secret.x
g add -A
g commit -q -m 'agent work'
printf 'more\n' >> added.txt
g commit -q -am 'agent more'
printf 'uncommitted\n' >> README.md
printf 'a\nb\n' > untracked.txt
name=$(printf '%s\n%s' '-odd "name"' 'with newline é.txt')
printf 'x\n' > "./$name"
`;

async function repoWithWork(hh: Harness = h) {
  const name = `diff-${++n}`;
  const dir = makeRepo(hh.scratch, name, {
    files: {
      'README.md': '# r\n',
      'moved-from.txt': 'a file long enough\nto be found\nas a rename\nby git\n',
      'gone.txt': 'to delete\n',
      '.gitattributes': '*.x diff=evil\n',
      'secret.x': 'plain\n',
    },
  });
  // A driver the repository's config names: the service's git must never run it.
  git(dir, 'config', 'diff.evil.textconv', `touch ${PWNED}`);
  git(dir, 'config', 'diff.evil.command', `touch ${PWNED}`);
  const id = await registerRepo(hh, dir, name);
  return { dir, name, id };
}

async function taskWithAgentWork(r: { id: string; name: string }, hh: Harness = h) {
  const taskId = await createTask(hh, [r.id]);
  const res = await launch(hh, taskId, { command: ['sh', '-c', AGENT_SCRIPT] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const ended = await agentEnded(hh, res.body.sessionId);
  expect(ended.execution?.exitCode, JSON.stringify(ended)).toBe(0);
  return {
    taskId,
    sessionId: res.body.sessionId as string,
    worktree: path.join(hh.config.workspaceRoot, taskDirName(taskId), r.name),
  };
}

const diffOf = (taskId: string, query = '', hh: Harness = h) => hh.api('GET', `/v1/tasks/${taskId}/diff${query}`);

async function diffText(taskId: string, query = ''): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(`${h.baseUrl}/v1/tasks/${taskId}/diff${query}`, {
    headers: { authorization: `Bearer ${USER_TOKEN}`, accept: 'text/x-diff' },
  });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

const byPath = (files: any[]) => Object.fromEntries(files.map((f) => [f.path, f]));

describe('task diff [R8.1]', () => {
  it("an agent's committed and uncommitted work, file by file, with the patch; nothing changed by reading it", async () => {
    rmSync(PWNED, { force: true });
    const r = await repoWithWork();
    const base = commitOf(r.dir, 'main');
    const t = await taskWithAgentWork(r);
    // The base moves on meanwhile: the task is one behind it.
    writeFileSync(path.join(r.dir, 'base-only.txt'), 'base\n');
    git(r.dir, 'add', 'base-only.txt');
    git(r.dir, 'commit', '-q', '-m', 'base moves');

    const indexFile = git(r.dir, 'rev-parse', '--path-format=absolute', '--git-path', `worktrees/${r.name}/index`);
    const before = {
      index: readFileSync(indexFile),
      indexMtime: statSync(indexFile).mtimeMs,
      refs: git(r.dir, 'for-each-ref', '--format=%(refname) %(objectname)'),
      status: git(t.worktree, 'status', '--porcelain=v1', '-z', '--untracked-files=all'),
    };

    const res = await diffOf(t.taskId, '?patch=1');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.repositories).toHaveLength(1);
    const d = res.body.repositories[0];
    const head = commitOf(r.dir, taskBranchName(t.taskId));
    expect(d).toMatchObject({ repositoryId: r.id, baseBranch: 'main', mergeBase: base, head, ahead: 2, behind: 1 });
    expect(d.truncated).toBe(false);
    const files = byPath(d.files);
    const committed = d.files.filter((f: any) => !f.uncommitted).map((f: any) => f.path);
    expect(committed.sort()).toEqual(['README.md', 'added.txt', 'blob.bin', 'gone.txt', 'moved-to.txt', 'secret.x']);
    expect(files['added.txt']).toMatchObject({ status: 'added', additions: 4, deletions: 0, binary: false });
    expect(files['moved-to.txt']).toMatchObject({ status: 'renamed', previousPath: 'moved-from.txt' });
    expect(files['gone.txt']).toMatchObject({ status: 'deleted', additions: 0, deletions: 1 });
    expect(files['blob.bin']).toMatchObject({ status: 'added', additions: 0, deletions: 0, binary: true });
    expect(files['secret.x']).toMatchObject({ status: 'modified', additions: 1, deletions: 0, binary: false });
    const uncommitted = d.files.filter((f: any) => f.uncommitted);
    expect(uncommitted).toEqual([
      { path: 'README.md', status: 'modified', additions: 1, deletions: 0, binary: false, uncommitted: true },
      expect.objectContaining({ path: HOSTILE, status: 'untracked', additions: 1, uncommitted: true }),
      { path: 'untracked.txt', status: 'untracked', additions: 2, deletions: 0, binary: false, uncommitted: true },
    ]);
    // The base's own commit is not the task's.
    expect(files['base-only.txt']).toBeUndefined();

    // The patch: committed part first, then uncommitted; the driver's file diffed as it is.
    expect(d.patch).toContain('diff --git a/added.txt b/added.txt');
    expect(d.patch).toContain('+change');
    expect(d.patch).toContain('Binary files /dev/null and b/blob.bin differ');
    expect(d.patch.indexOf('+uncommitted')).toBeGreaterThan(d.patch.indexOf('+more'));
    expect(d.patch).toContain('+++ b/untracked.txt');
    expect(existsSync(PWNED)).toBe(false);

    // As text: the same patch.
    const text = await diffText(t.taskId);
    expect(text.status).toBe(200);
    expect(text.type).toMatch(/^text\/x-diff/);
    expect(text.text).toBe(d.patch);
    // Without patch=1, no patch.
    const plain = await diffOf(t.taskId);
    expect(plain.body.repositories[0].patch).toBeUndefined();
    expect(plain.body.repositories[0].files).toEqual(d.files);
    // One path.
    const one = await diffOf(t.taskId, `?path=${encodeURIComponent('README.md')}&patch=1`);
    expect(one.body.repositories[0].files.map((f: any) => [f.path, f.uncommitted])).toEqual([
      ['README.md', false],
      ['README.md', true],
    ]);
    expect(one.body.repositories[0].patch).not.toContain('added.txt');

    // The CLI: a line per file, the patch with --patch, JSON with --json; an unknown task is exit 4.
    const env = { TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN };
    const printed = async (argv: string[]) => {
      let said = '';
      expect(await tws(argv, env, (x) => (said += x))).toBe(EXIT.ok);
      return said;
    };
    const summary = await printed(['diff', t.taskId]);
    expect(summary).toContain('ahead 2, behind 1');
    expect(summary).toMatch(/R \+0 -0 +moved-from\.txt -> moved-to\.txt/);
    expect(summary).toMatch(/A binary +blob\.bin/);
    expect(summary).toContain(`? +1 -0        ${JSON.stringify(HOSTILE)}  (uncommitted)`);
    expect(await printed(['diff', t.taskId, '--patch'])).toBe(d.patch);
    expect(JSON.parse(await printed(['diff', t.taskId, '--json'])).repositories[0].files).toEqual(d.files);
    const missing = await tws(['diff', '00000000-0000-4000-8000-000000000000'], env, () => undefined).catch(
      (err: unknown) => err,
    );
    expect(missing).toBeInstanceOf(CliError);
    expect((missing as CliError).code).toBe(EXIT.notFound);

    // Nothing was changed by reading: the index (bytes and time), every ref, the worktree's status.
    expect(readFileSync(indexFile).equals(before.index)).toBe(true);
    expect(statSync(indexFile).mtimeMs).toBe(before.indexMtime);
    expect(git(r.dir, 'for-each-ref', '--format=%(refname) %(objectname)')).toBe(before.refs);
    expect(git(t.worktree, 'status', '--porcelain=v1', '-z', '--untracked-files=all')).toBe(before.status);
    expect(existsSync(PWNED)).toBe(false);
  });

  it('cut at the file and byte limits, with truncated; unknown task, repository or path refused', async () => {
    const small = await createHarness({ diffMaxFiles: 3, diffMaxBytes: 300 });
    try {
      const r = await repoWithWork(small);
      const t = await taskWithAgentWork(r, small);
      const res = await diffOf(t.taskId, '?patch=1', small);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const d = res.body.repositories[0];
      expect(d.truncated).toBe(true);
      expect(d.files).toHaveLength(3);
      expect(Buffer.byteLength(d.patch)).toBeLessThanOrEqual(300);
      expect(d.patch.endsWith('\n')).toBe(true);
      const text = await fetch(`${small.baseUrl}/v1/tasks/${t.taskId}/diff`, {
        headers: { authorization: `Bearer ${USER_TOKEN}`, accept: 'text/x-diff' },
      }).then((x) => x.text());
      expect(text).toBe(d.patch);

      expectSafeError((await diffOf('00000000-0000-4000-8000-000000000000', '', small)).body, 'not_found');
      const other = await diffOf(t.taskId, '?repositoryId=00000000-0000-4000-8000-000000000000', small);
      expect(other.status).toBe(404);
      expectSafeError(other.body, 'not_found');
      const outside = await diffOf(t.taskId, `?path=${encodeURIComponent('../x')}`, small);
      expect(outside.status).toBe(400);
      expectSafeError(outside.body, 'invalid_request', [r.dir, small.config.workspaceRoot]);
    } finally {
      await small.close();
    }
  });

  it('a task with no branch yet: its repository with no files', async () => {
    const r = await repoWithWork();
    const taskId = await createTask(h, [r.id]);
    const res = await diffOf(taskId, '?patch=1');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.repositories).toEqual([
      {
        repositoryId: r.id,
        baseBranch: 'main',
        mergeBase: null,
        head: null,
        ahead: 0,
        behind: 0,
        files: [],
        patch: '',
        truncated: false,
      },
    ]);
  });

  it('an archived task: its committed work from its kept branch', async () => {
    const r = await repoWithWork();
    const t = await taskWithAgentWork(r);
    git(t.worktree, 'stash', '-u', '-q'); // archive keeps a dirty worktree; a clean one is released
    const job = await waitForJob(h, (await archive(h, t.taskId)).operationId);
    expect(job.state).toBe('succeeded');
    expect(existsSync(t.worktree)).toBe(false);
    const res = await diffOf(t.taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const d = res.body.repositories[0];
    expect(d.head).toBe(commitOf(r.dir, taskBranchName(t.taskId)));
    expect(d.ahead).toBe(2);
    expect(d.files.every((f: any) => !f.uncommitted)).toBe(true);
    expect(d.files.map((f: any) => f.path).sort()).toEqual([
      'README.md',
      'added.txt',
      'blob.bin',
      'gone.txt',
      'moved-to.txt',
      'secret.x',
    ]);
  });

  it('a released task: committed work from its branch, uncommitted from its saved work', async () => {
    const r = await repoWithWork();
    const t = await taskWithAgentWork(r);
    const job = await releaseIdleTask(h, t.taskId);
    expect(job.state).toBe('succeeded');
    expect(existsSync(t.worktree)).toBe(false);
    const res = await diffOf(t.taskId, '?patch=1');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const d = res.body.repositories[0];
    expect(d.ahead).toBe(2);
    const uncommitted = d.files.filter((f: any) => f.uncommitted);
    expect(uncommitted.map((f: any) => [f.path, f.status]).sort()).toEqual([
      [HOSTILE, 'added'],
      ['README.md', 'modified'],
      ['untracked.txt', 'added'],
    ]);
    expect(d.patch).toContain('+uncommitted');
    expect(existsSync(PWNED)).toBe(false);
  });
});

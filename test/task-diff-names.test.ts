/**
 * A task's diff [R8.1] names every file by its real path, whatever git quotes: markup with a `"`,
 * names past ASCII, a tab, a backslash, a space, in committed, renamed and untracked files. The
 * file list gives the UTF-8 path; the patch writes names past ASCII as they are and quotes the
 * others as git does; and the console's reading of the patch (console/src/patch-files.ts) finds
 * every listed file in it by that path.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitPatch } from '../console/src/patch-files';
import { taskDirName } from '../domain/task-layout';
import { createHarness, USER_TOKEN, type Harness } from './support/harness';
import { agentEnded, createTask, launch, registerRepo } from './support/scenario';
import { git, makeRepo } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const MARKUP = '"><script>alert(1)</script>.txt';
const WIDE = 'naïve–文件.md';
const TAB = 'tab\there.txt';
const BACKSLASH = 'back\\slash.txt';
const UNTRACKED = 'überall "neu".txt';

describe('task diff names [R8.1]', () => {
  it('files whose names git quotes come back by their real paths, in the file list and the patch', async () => {
    const repo = makeRepo(h.scratch, 'names', { files: { 'with space.txt': 'spaced\n', 'README.md': '# r\n' } });
    const taskId = await createTask(h, [await registerRepo(h, repo, 'names')]);
    const launched = await launch(h, taskId, { command: ['true'] });
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    await agentEnded(h, launched.body.sessionId);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'names');
    for (const name of [MARKUP, WIDE, TAB, BACKSLASH]) {
      mkdirSync(path.dirname(path.join(worktree, name)), { recursive: true });
      writeFileSync(path.join(worktree, name), `the line of ${name}\n`);
    }
    git(worktree, 'mv', 'with space.txt', 'moved é "here".txt');
    git(worktree, 'add', '-A');
    git(worktree, 'commit', '-q', '-m', 'names');
    writeFileSync(path.join(worktree, UNTRACKED), 'new and untracked\n');

    const res = await h.api('GET', `/v1/tasks/${taskId}/diff?patch=1`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const d = res.body.repositories[0];
    expect(d.files.map((f: any) => [f.path, f.status, f.additions, f.uncommitted]).sort()).toEqual(
      [
        [MARKUP, 'added', 1, false],
        [WIDE, 'added', 1, false],
        [TAB, 'added', 1, false],
        [BACKSLASH, 'added', 1, false],
        ['moved é "here".txt', 'renamed', 0, false],
        [UNTRACKED, 'untracked', 1, true],
      ].sort(),
    );
    expect(d.files.find((f: any) => f.status === 'renamed').previousPath).toBe('with space.txt');

    // The patch: a name past ASCII as it is, the others quoted as git quotes them.
    expect(d.patch).toContain(`+++ b/${WIDE}\n`);
    expect(d.patch).toContain('+++ "b/\\"><script>alert(1)</script>.txt"\n');
    expect(d.patch).toContain('+++ "b/tab\\there.txt"\n');
    expect(d.patch).toContain('+++ "b/back\\\\slash.txt"\n');
    expect(d.patch).toContain('rename to "moved é \\"here\\".txt"\n');
    expect(d.patch).toContain('+++ "b/überall \\"neu\\".txt"\t\n');
    // Every listed file is found in the patch by its path, with its own line.
    const sections = splitPatch(d.patch);
    expect(sections.map((s) => s.path).sort()).toEqual(d.files.map((f: any) => f.path).sort());
    for (const name of [MARKUP, WIDE, TAB, BACKSLASH])
      expect(sections.find((s) => s.path === name)!.text).toContain(`+the line of ${name}\n`);
    expect(sections.find((s) => s.path === UNTRACKED)!.text).toContain('+new and untracked\n');

    // As text: the same patch, in UTF-8.
    const text = await fetch(`${h.baseUrl}/v1/tasks/${taskId}/diff`, {
      headers: { authorization: `Bearer ${USER_TOKEN}`, accept: 'text/x-diff' },
    });
    expect(await text.text()).toBe(d.patch);
    // One of them asked by its path.
    const one = await h.api('GET', `/v1/tasks/${taskId}/diff?patch=1&path=${encodeURIComponent(MARKUP)}`);
    expect(one.body.repositories[0].files.map((f: any) => f.path)).toEqual([MARKUP]);
    expect(splitPatch(one.body.repositories[0].patch).map((s) => s.path)).toEqual([MARKUP]);
  });
});

/**
 * The web console in a real browser, as a person uses it (issue 66): a user's task from the board's
 * form to its merge, a conflicting task that cannot be merged, and what users and agents wrote shown
 * as text. The console is the one the gateway serves at `/` (console/dist, built by the setup); the
 * DOM is the console contract's (data-testid). Each test ends by reading the world: git refs and
 * files of the repository, not the page alone.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { attributesNow, browserPerFile, signIn, textNow } from './support/browser';
import { releaseIdleTask } from './support/cleanup';
import { commitIn, taskWithCommits } from './support/finishing';
import { createHarness, USER_TOKEN, type Harness } from './support/harness';
import { agentEnded, createTask, launch, registerRepo } from './support/scenario';
import { commitOf, git, makeRepo } from './support/world';

let h: Harness;
const browser = browserPerFile();

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const WAIT = { timeout: 30_000 };

/** Marks the page's window: the mark is still there only if the page was never loaded again. */
const markWindow = (page: Page) => page.evaluate('window.__notReloaded = true');
const stillTheSameWindow = (page: Page) => page.evaluate('window.__notReloaded === true');

/**
 * The task page's diff file list, until it holds `file`: as a person would, Refresh is clicked when
 * the list has not shown it for 5 s (each click reloads the list, so not at every look).
 */
async function diffShows(page: Page, file: string): Promise<void> {
  let clicked = Date.now();
  await expect
    .poll(async () => {
      const paths = await attributesNow(page.getByTestId('diff-file'), 'data-path');
      if (!paths.includes(file) && Date.now() - clicked > 5000) {
        await page.getByTestId('diff-refresh').click();
        clicked = Date.now();
      }
      return paths;
    }, WAIT)
    .toContain(file);
}

/** The highest `line-<n>` of a log's text (0 when none). */
const lastLine = (text: string): number => Math.max(0, ...[...text.matchAll(/line-(\d+)/g)].map((m) => Number(m[1])));

const card = (page: Page, column: string, taskId: string) =>
  page.locator(`[data-testid=column-${column}] [data-testid=task-card][data-task-id="${taskId}"]`);

describe('the console in a browser', () => {
  it('a user creates a task from the board, launches an agent whose log grows live, reviews its diff and merges it into the base branch; a reload keeps the page', async () => {
    const repo = makeRepo(h.scratch, 'journey');
    const repositoryId = await registerRepo(h, repo, 'journey');
    const baseBefore = commitOf(repo, 'main');
    const { page } = await browser.page(h.baseUrl);
    await signIn(page, USER_TOKEN, 'user');

    // The board's form makes the task and opens its page.
    await page.getByTestId('new-task').click();
    await page.getByTestId('task-title').fill('Write the journey file');
    await page.locator(`input[data-testid=task-repo][value="${repositoryId}"]`).check();
    await page.getByTestId('create-task').click();
    await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/, WAIT);
    const taskId = new URL(page.url()).hash.split('/')[2]!;
    expect((await h.api('GET', `/v1/tasks/${taskId}`)).body).toMatchObject({ title: 'Write the journey file' });
    await expect.poll(() => textNow(page.getByTestId('task-title')), WAIT).toBe('Write the journey file');
    await markWindow(page);

    // One shell line: a commit on the task branch, then a line every 0.3 s.
    await page
      .getByTestId('launch-command')
      .fill(
        'echo journey > journey.txt && git add journey.txt && git -c user.name=agent -c user.email=agent@example.com commit -q -m "Add the journey file" && echo committed && for i in $(seq 1 40); do echo line-$i; sleep 0.3; done',
      );
    await page.getByTestId('launch').click();
    // The log view shows its last lines: it grows while the agent prints, the page never loaded again.
    const log = page.getByTestId('session-log');
    await expect.poll(async () => lastLine(await textNow(log)), WAIT).toBeGreaterThan(0);
    const seenFirst = lastLine(await textNow(log));
    await expect.poll(async () => lastLine(await textNow(log)), WAIT).toBeGreaterThanOrEqual(seenFirst + 5);
    expect(await page.getByTestId('session').count()).toBe(1);
    expect(await stillTheSameWindow(page)).toBe(true);

    // The diff holds the agent's file; the preview says it merges cleanly.
    await diffShows(page, 'journey.txt');
    await page.locator('[data-testid=diff-file][data-path="journey.txt"]').click();
    await expect.poll(() => textNow(page.getByTestId('diff-view')), WAIT).toContain('journey');
    await expect.poll(() => attributesNow(page.getByTestId('merge-preview'), 'data-outcome'), WAIT).toEqual(['clean']);

    await page.getByTestId('merge-message').fill('Add the journey file');
    await page.getByTestId('merge').click();
    await expect
      .poll(() => attributesNow(page.getByTestId('merge-result'), 'data-state'), { timeout: 60_000 })
      .toEqual(['merged']);

    // The base branch has the agent's commit's work, under the message typed.
    expect(commitOf(repo, 'main')).not.toBe(baseBefore);
    expect(git(repo, 'merge-base', '--is-ancestor', baseBefore, 'main')).toBe('');
    expect(git(repo, 'show', 'main:journey.txt')).toBe('journey');
    expect(git(repo, 'log', '-1', '--format=%s', 'main')).toBe('Add the journey file');

    // The board shows it merged.
    await page.getByTestId('nav-board').click();
    await expect.poll(() => card(page, 'merged', taskId).count(), WAIT).toBe(1);
    expect(await textNow(card(page, 'merged', taskId))).toContain('Write the journey file');
    expect(await stillTheSameWindow(page)).toBe(true);

    // A reload keeps the page and the sign-in (the tab's sessionStorage, never localStorage or the URL).
    await page.goto(`/#/tasks/${taskId}`);
    await page.reload();
    expect(new URL(page.url()).hash).toBe(`#/tasks/${taskId}`);
    await expect.poll(() => textNow(page.getByTestId('role')), WAIT).toBe('user');
    await expect.poll(() => textNow(page.getByTestId('task-title')), WAIT).toBe('Write the journey file');
    expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([USER_TOKEN]);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(page.url()).not.toContain(USER_TOKEN);
  });

  it('a conflicting task shows its conflicting files and cannot be merged from the page; no ref moves', async () => {
    const w = await taskWithCommits(h, 'clash', [{ 'shared.txt': 'the task says this\n' }], {
      files: { 'shared.txt': 'first\n' },
    });
    commitIn(w.repo, { 'shared.txt': 'the base says that\n' }, 'meanwhile on main');
    const refs = () => ({ base: commitOf(w.repo, 'main'), task: commitOf(w.repo, w.branch) });
    const before = refs();

    const { page } = await browser.page(h.baseUrl);
    await signIn(page, USER_TOKEN, 'user');
    await page.goto(`/#/tasks/${w.taskId}`);
    await expect
      .poll(() => attributesNow(page.getByTestId('merge-preview'), 'data-outcome'), WAIT)
      .toEqual(['conflicts']);
    await expect.poll(() => textNow(page.getByTestId('conflict-file')), WAIT).toBe('shared.txt');
    expect(await page.getByTestId('merge').isDisabled()).toBe(true);
    // Forced, the click on a disabled button does nothing either.
    await page.getByTestId('merge').click({ force: true });
    expect(await page.getByTestId('merge-result').count()).toBe(0);
    expect(refs()).toEqual(before);
    expect((await h.api('GET', `/v1/tasks/${w.taskId}`)).body.merged ?? null).toBeNull();
  });

  it('a merge refused for a conflict and saved work that did not apply come into Needs attention live, each with its reason in words', async () => {
    const { page } = await browser.page(h.baseUrl);
    await signIn(page, USER_TOKEN, 'user');
    await expect.poll(() => attributesNow(page.getByTestId('connection'), 'data-state'), WAIT).toEqual(['live']);
    await markWindow(page);

    // A task whose merge the base's own change refuses.
    const w = await taskWithCommits(h, 'attention-clash', [{ 'shared.txt': 'the task says this\n' }], {
      files: { 'shared.txt': 'first\n' },
    });
    commitIn(w.repo, { 'shared.txt': 'the base says that\n' }, 'meanwhile on main');
    await expect.poll(() => card(page, 'idle', w.taskId).count(), WAIT).toBe(1);
    const refused = await h.api('POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    await expect
      .poll(() => textNow(card(page, 'attention', w.taskId)), WAIT)
      .toContain('Its merge was refused: a conflict');
    expect(await attributesNow(card(page, 'attention', w.taskId), 'data-attention')).toEqual(['merge_conflict']);

    // A task released idle with work of its own, whose branch moved on the same lines meanwhile.
    const repo = makeRepo(h.scratch, 'attention-restore');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'attention-restore')], { title: 'restore me' });
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'attention-restore');
    writeFileSync(path.join(worktree, 'README.md'), '# mine\n');
    expect((await releaseIdleTask(h, taskId)).state).toBe('succeeded');
    const side = path.join(h.scratch, `side-${randomUUID()}`);
    git(repo, 'worktree', 'add', '-q', side, taskBranchName(taskId));
    commitIn(side, { 'README.md': '# theirs\n' }, 'moved on');
    git(repo, 'worktree', 'remove', side);
    await expect.poll(() => card(page, 'idle', taskId).count(), WAIT).toBe(1);
    const again = await launch(h, taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect((await h.api('GET', `/v1/sessions/${again.body.sessionId}`)).body.restore).toBe('conflict');
    await expect
      .poll(() => textNow(card(page, 'attention', taskId)), WAIT)
      .toContain('Its saved work did not apply: a conflict');
    expect(await card(page, 'running', taskId).count()).toBe(0);

    // The world the cards say: the base unmoved by the refused merge, the saved work still on its ref.
    expect(git(w.repo, 'show', 'main:shared.txt')).toBe('the base says that');
    expect((await h.api('GET', `/v1/tasks/${w.taskId}`)).body.attention.reason).toBe('merge_conflict');
    expect((await h.api('GET', `/v1/tasks/${taskId}`)).body.attention.reason).toBe('restore_conflict');
    expect(await stillTheSameWindow(page)).toBe(true);
  });

  it('a title and file names that are markup or past ASCII show as text, with their lines: nothing of them runs or loads', async () => {
    const TITLE = '<img src=x onerror=alert(1)>';
    // Names git quotes in a patch's headers (a `"`; bytes past ASCII); the first holds a slash: a folder and a file in it.
    const FILE = '"><script>alert(1)</script>.txt';
    const WIDE = 'naïve–文件.md';
    const repo = makeRepo(h.scratch, 'markup');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'markup')], { title: TITLE });
    // The agent's commit: a line naming each file in it, and a file whose lines are markup.
    const script = [
      'set -e',
      'for n in "$@"; do mkdir -p "$(dirname "$n")"; printf "the line of %s\\n" "$n" > "$n"; done',
      "printf '<b>not bold</b><img src=y onerror=alert(2)>\\n' > notes.html",
      'git add -A',
      'git -c user.name=agent -c user.email=agent@example.com commit -q -m "$0"',
    ].join('\n');
    const launched = await launch(h, taskId, { command: ['sh', '-c', script, TITLE, FILE, WIDE] });
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    const ended = await agentEnded(h, launched.body.sessionId);
    expect(ended.execution?.exitCode, JSON.stringify(ended)).toBe(0);
    const committed = git(repo, 'ls-tree', '-r', '-z', '--name-only', taskBranchName(taskId)).split('\0');
    expect(committed).toEqual(expect.arrayContaining([FILE, WIDE, 'notes.html']));

    const watched = await browser.page(h.baseUrl);
    const { page } = watched;
    await signIn(page, USER_TOKEN, 'user');
    const onBoard = page.locator(`[data-testid=task-card][data-task-id="${taskId}"]`);
    await expect.poll(() => textNow(onBoard), WAIT).toContain(TITLE);

    await page.goto(`/#/tasks/${taskId}`);
    await expect.poll(() => textNow(page.getByTestId('task-title')), WAIT).toBe(TITLE);
    await diffShows(page, FILE);
    // Each name in the list and over its view, and its added line drawn by the diff view (not the fallback text).
    for (const name of [FILE, WIDE]) {
      const entry = page.locator(`[data-testid=diff-file][data-path=${JSON.stringify(name)}]`);
      expect(await textNow(entry)).toBe(name);
      await entry.click();
      await expect.poll(() => textNow(page.locator('.diff-view > p > b')), WAIT).toBe(name);
      await expect
        .poll(() => textNow(page.locator('[data-testid=diff-view] .diff-code-insert')), WAIT)
        .toBe(`the line of ${name}`);
      expect(await page.getByTestId('diff-raw').count()).toBe(0);
    }
    // A diff's lines that are markup are text too.
    await page.locator('[data-testid=diff-file][data-path="notes.html"]').click();
    await expect
      .poll(() => textNow(page.getByTestId('diff-view')), WAIT)
      .toContain('<b>not bold</b><img src=y onerror=alert(2)>');

    // Nothing ran and nothing was fetched from the markup: no dialog, no request but to the gateway, no such elements.
    expect(watched.dialogs).toEqual([]);
    expect(watched.requests.filter((url) => new URL(url).origin !== new URL(h.baseUrl).origin)).toEqual([]);
    expect(watched.requests.filter((url) => /\/[xy]$/.test(new URL(url).pathname))).toEqual([]);
    expect(await page.locator('img[src="x"], img[src="y"]').count()).toBe(0);
    expect(await page.locator('script', { hasText: 'alert(1)' }).count()).toBe(0);
    expect(await page.locator('b', { hasText: 'not bold' }).count()).toBe(0);
  });
});

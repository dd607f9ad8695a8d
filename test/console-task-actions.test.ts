/**
 * The task page's actions in a real browser, as a person uses them: stop and resume a session
 * (its log goes on), rebase onto a base that moved (and one that conflicts: the files named,
 * nothing moved), undo a merge (the base goes back; the board takes the task out of merged, and an
 * undo the base outgrew is refused in words), archive and unarchive with uncommitted work, and an
 * operator's delete, refused until the consent is given. Each test ends by reading the world:
 * git refs and files, the API's bodies.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attributesNow, browserPerFile, signIn, textNow } from './support/browser';
import { savedWorkOf, waitForJob } from './support/cleanup';
import { commitIn, taskWithCommits } from './support/finishing';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { fingerprint, git, commitOf } from './support/world';

let h: Harness;
const browser = browserPerFile();

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const WAIT = { timeout: 30_000 };

const card = (page: Page, column: string, taskId: string) =>
  page.locator(`[data-testid=column-${column}] [data-testid=task-card][data-task-id="${taskId}"]`);

async function openTask(taskId: string, as: 'user' | 'operator' = 'user') {
  const watched = await browser.page(h.baseUrl);
  await signIn(watched.page, as === 'user' ? USER_TOKEN : OPERATOR_TOKEN, as);
  await watched.page.goto(`/#/tasks/${taskId}`);
  await expect.poll(() => textNow(watched.page.getByTestId('task-title')), WAIT).not.toBe('');
  return watched.page;
}

/** The error the page shows now: its code, and its words (the message and what to do). */
const shownError = async (page: Page) => ({
  codes: await attributesNow(page.getByTestId('error'), 'data-code'),
  text: await textNow(page.getByTestId('error')),
});

const sessionState = async (sessionId: string) => (await h.api('GET', `/v1/sessions/${sessionId}`)).body.state;

describe('the task page in a browser: its actions', () => {
  it('a session stopped from the page ends its agent; resumed from the page it runs again and its log goes on', async () => {
    const w = await taskWithCommits(h, 'stop-resume', []);
    const page = await openTask(w.taskId);
    const session = page.locator(`[data-testid=session][data-session-id="${w.sessionId}"]`);
    await expect.poll(() => textNow(session.getByTestId('session-state')), WAIT).not.toBe('');

    // A resume of the ended session: the agent runs again with the launch's command (`true`), so
    // first a session that prints: launched from the page.
    await page
      .getByTestId('launch-command')
      .fill('echo run-$(date +%s%N); for i in $(seq 1 600); do echo tick-$i; sleep 0.2; done');
    await page.getByTestId('launch').click();
    const printer = page.getByTestId('session').filter({ hasText: 'tick-' });
    await expect.poll(() => printer.count(), WAIT).toBe(1);
    const sessionId = (await attributesNow(printer, 'data-session-id'))[0]!;
    const printing = page.locator(`[data-testid=session][data-session-id="${sessionId}"]`);
    const runs = async () =>
      [...(await textNow(printing.getByTestId('session-log'))).matchAll(/run-\d+/g)].map((m) => m[0]);
    await expect.poll(() => textNow(printing.getByTestId('session-state')), WAIT).toBe('running');

    // A rebase while the agent works is refused, in words.
    await page.getByTestId('rebase').click();
    await expect.poll(() => shownError(page), WAIT).toMatchObject({ codes: ['session_running'] });
    expect((await shownError(page)).text).toContain('Stop the running session first.');

    await printing.getByTestId('session-stop').click();
    await expect.poll(() => textNow(printing.getByTestId('session-state')), WAIT).not.toBe('running');
    expect(await sessionState(sessionId)).not.toBe('running');
    const [firstRun] = await runs();
    expect(firstRun).toMatch(/^run-\d+$/);

    await expect.poll(() => printing.getByTestId('session-resume').isEnabled(), WAIT).toBe(true);
    await printing.getByTestId('session-resume').click();
    await expect.poll(() => textNow(printing.getByTestId('session-state')), WAIT).toBe('running');
    expect(await sessionState(sessionId)).toBe('running');
    // The log shows the second run's start and its ticks: it went on after the resume.
    await expect.poll(async () => (await runs()).filter((run) => run !== firstRun).length, WAIT).toBe(1);
    await printing.getByTestId('session-stop').click();
    await expect.poll(() => sessionState(sessionId), WAIT).not.toBe('running');
  });

  it('a task whose base moved is rebased from the page; a rebase that conflicts names the files and moves nothing', async () => {
    const w = await taskWithCommits(h, 'rebase', [{ 'task.txt': 'the task\n' }], { files: { 'shared.txt': 'one\n' } });
    commitIn(w.repo, { 'base.txt': 'the base moved\n' }, 'meanwhile on main');
    const page = await openTask(w.taskId);
    await expect.poll(() => textNow(page.getByTestId('git-status')), WAIT).toContain('1 behind');

    await page.getByTestId('rebase').click();
    await expect.poll(() => textNow(page.getByTestId('rebase-result')), WAIT).toContain('Rebased');
    // The world: main is in the task branch now, the task's commit on top, the worktree on it.
    expect(git(w.repo, 'merge-base', '--is-ancestor', 'main', w.branch)).toBe('');
    expect(git(w.repo, 'show', `${w.branch}:task.txt`)).toBe('the task');
    expect(git(w.worktree, 'rev-parse', 'HEAD')).toBe(commitOf(w.repo, w.branch));
    await expect.poll(() => textNow(page.getByTestId('git-status')), WAIT).toContain('0 behind');

    // Now the base and the task change the same line: the rebase is refused, and names the file.
    commitIn(w.worktree, { 'shared.txt': 'the task says this\n' }, 'task edits shared');
    commitIn(w.repo, { 'shared.txt': 'the base says that\n' }, 'base edits shared');
    const before = { task: commitOf(w.repo, w.branch), base: commitOf(w.repo, 'main'), files: fingerprint(w.worktree) };
    await page.getByTestId('rebase').click();
    await expect.poll(() => shownError(page), WAIT).toMatchObject({ codes: ['merge_conflict'] });
    const { text } = await shownError(page);
    expect(text).toContain('Rebase the task onto its base, or resolve the conflicts');
    expect(await textNow(page.getByTestId('error-conflict-file'))).toBe('shared.txt');
    expect({
      task: commitOf(w.repo, w.branch),
      base: commitOf(w.repo, 'main'),
      files: fingerprint(w.worktree),
    }).toEqual(before);
    expect(git(w.worktree, 'status', '--porcelain')).toBe('');
  });

  it('a merge undone from the page moves the base back, shows undone, and the board takes the task out of merged; an undo the base outgrew is refused in words', async () => {
    const w = await taskWithCommits(h, 'undo', [{ 'undo.txt': 'to be undone\n' }]);
    const baseBefore = commitOf(w.repo, 'main');
    const page = await openTask(w.taskId);
    await expect.poll(() => attributesNow(page.getByTestId('merge-preview'), 'data-outcome'), WAIT).toEqual(['clean']);
    await page.getByTestId('merge').click();
    await expect.poll(() => attributesNow(page.getByTestId('merge-result'), 'data-state'), WAIT).toEqual(['merged']);
    expect(commitOf(w.repo, 'main')).not.toBe(baseBefore);

    await page.getByTestId('undo-merge').click();
    await expect.poll(() => attributesNow(page.getByTestId('merge-result'), 'data-state'), WAIT).toEqual(['undone']);
    expect(commitOf(w.repo, 'main')).toBe(baseBefore);
    await expect.poll(() => textNow(page.getByTestId('merge-list')), WAIT).toContain('undone');
    const merges = (await h.api('GET', `/v1/tasks/${w.taskId}/merges`)).body.items;
    expect(merges.map((m: { state: string }) => m.state)).toEqual(['undone']);
    await expect.poll(() => textNow(page.getByTestId('task-state')), WAIT).toBe('active');

    await page.getByTestId('nav-board').click();
    await expect.poll(() => card(page, 'idle', w.taskId).count(), WAIT).toBe(1);
    expect(await card(page, 'merged', w.taskId).count()).toBe(0);

    // Merged again, then the base outgrows the merge: the undo is refused, its words shown, nothing moves.
    await page.goto(`/#/tasks/${w.taskId}`);
    await expect.poll(() => attributesNow(page.getByTestId('merge-preview'), 'data-outcome'), WAIT).toEqual(['clean']);
    await page.getByTestId('merge').click();
    await expect.poll(() => attributesNow(page.getByTestId('merge-result'), 'data-state'), WAIT).toEqual(['merged']);
    const after = commitIn(w.repo, { 'later.txt': 'later\n' }, 'a later commit on main');
    await page.getByTestId('undo-merge').click();
    await expect.poll(() => shownError(page), WAIT).toMatchObject({ codes: ['base_moved_since_merge'] });
    expect((await shownError(page)).text).toContain('revert the merge by a new commit instead');
    expect(commitOf(w.repo, 'main')).toBe(after);
  });

  it('a task blocked only by uncommitted work cannot be merged until the person lets the merge commit it; then the base has that work', async () => {
    const w = await taskWithCommits(h, 'commit-with-merge', [{ 'done.txt': 'committed\n' }]);
    writeFileSync(path.join(w.worktree, 'draft.txt'), 'not committed yet\n');
    const baseBefore = commitOf(w.repo, 'main');
    const page = await openTask(w.taskId);
    await expect
      .poll(() => attributesNow(page.getByTestId('merge-preview'), 'data-outcome'), WAIT)
      .toEqual(['blocked']);
    expect(await textNow(page.getByTestId('merge-preview'))).toContain('it has uncommitted changes');
    expect(await page.getByTestId('merge').isDisabled()).toBe(true);

    await page.getByTestId('consent-commit').check();
    expect(await page.getByTestId('merge').isEnabled()).toBe(true);
    await page.getByTestId('merge').click();
    await expect.poll(() => attributesNow(page.getByTestId('merge-result'), 'data-state'), WAIT).toEqual(['merged']);
    expect(git(w.repo, 'merge-base', '--is-ancestor', baseBefore, 'main')).toBe('');
    expect(git(w.repo, 'show', 'main:draft.txt')).toBe('not committed yet');
    expect(git(w.repo, 'show', 'main:done.txt')).toBe('committed');
    expect(git(w.worktree, 'status', '--porcelain')).toBe('');
  });

  it('a task with uncommitted work is archived from the page, its work kept in its worktree; unarchived from the page it is active again', async () => {
    const w = await taskWithCommits(h, 'archive', []);
    writeFileSync(path.join(w.worktree, 'draft.txt'), 'not committed\n');
    const page = await openTask(w.taskId);
    await expect.poll(() => textNow(page.getByTestId('git-status')), WAIT).toContain('1 changed');

    // A rebase of uncommitted work is refused, in words; nothing moves.
    const head = commitOf(w.repo, w.branch);
    await page.getByTestId('rebase').click();
    await expect.poll(() => shownError(page), WAIT).toMatchObject({ codes: ['task_uncommitted_changes'] });
    expect((await shownError(page)).text).toContain('Commit the work');
    expect(commitOf(w.repo, w.branch)).toBe(head);

    await page.getByTestId('archive').click();
    await expect.poll(() => textNow(page.getByTestId('task-state')), WAIT).toBe('archived');
    expect((await h.api('GET', `/v1/tasks/${w.taskId}`)).body.state).toBe('archived');
    const jobs = (await h.api('GET', `/v1/cleanup-jobs?taskId=${w.taskId}`, undefined, OPERATOR_TOKEN)).body.items;
    await waitForJob(h, jobs[0].operationId);
    // Archive keeps a dirty worktree where it is, the work in it; the page says so.
    expect(git(w.worktree, 'status', '--porcelain')).toBe('?? draft.txt');
    await expect.poll(() => textNow(page.getByTestId('lifecycle-done')), WAIT).toContain('uncommitted work stays');
    expect(await page.getByTestId('launch').isDisabled()).toBe(true);

    await page.getByTestId('unarchive').click();
    await expect.poll(() => textNow(page.getByTestId('task-state')), WAIT).toBe('active');
    expect((await h.api('GET', `/v1/tasks/${w.taskId}`)).body.state).toBe('active');
    expect(await page.getByTestId('archive').count()).toBe(1);
  });

  it("an operator's delete of a task with uncommitted work is refused in words until the consent is given; then the work is saved, the task gone from the board, and its page says so", async () => {
    const w = await taskWithCommits(h, 'delete', []);
    writeFileSync(path.join(w.worktree, 'draft.txt'), 'not committed\n');
    const page = await openTask(w.taskId, 'operator');

    await page.getByTestId('delete').click();
    await expect.poll(() => shownError(page), WAIT).toMatchObject({ codes: ['task_delete_dirty_worktree'] });
    expect((await shownError(page)).text).toContain('confirm that it may be discarded');
    expect((await h.api('GET', `/v1/tasks/${w.taskId}`)).status).toBe(200);
    expect(git(w.worktree, 'status', '--porcelain')).toBe('?? draft.txt');

    await page.getByTestId('consent-discard').check();
    await page.getByTestId('delete').click();
    await expect.poll(() => textNow(page.getByTestId('task-gone')), WAIT).toContain('deleted');
    expect((await h.api('GET', `/v1/tasks/${w.taskId}`)).status).toBe(404);
    await expect.poll(async () => (await savedWorkOf(h, w.repoId, w.taskId)).length, { timeout: 60_000 }).toBe(1);
    const [saved] = await savedWorkOf(h, w.repoId, w.taskId);
    expect(git(w.repo, 'show', `${saved.commit}:draft.txt`)).toBe('not committed');

    await page.getByTestId('nav-board').click();
    await expect.poll(() => page.getByTestId('column-idle').count(), WAIT).toBe(1);
    expect(await page.locator(`[data-testid=task-card][data-task-id="${w.taskId}"]`).count()).toBe(0);
    // Its page, opened afresh: the words say it is not there.
    await page.goto(`/#/tasks/${w.taskId}`);
    await expect.poll(() => shownError(page), WAIT).toMatchObject({ codes: ['not_found'] });
    expect((await shownError(page)).text).not.toBe('');
  });
});

/**
 * The operator's pages in a real browser, as an operator uses them: a cleanup job waiting for an
 * operator is cancelled from the cleanup jobs page (the page and the API say `cancelled`); the
 * hosts page shows the live host with its disk, says in words why an idle release cannot run
 * and why a task is kept, and releases an idle task's workspace (its work saved, its worktree
 * gone: read with git).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attributesNow, browserPerFile, signIn, textNow } from './support/browser';
import { archive, savedWorkOf, waitForJob } from './support/cleanup';
import { taskWithCommits } from './support/finishing';
import { createHarness, OPERATOR_TOKEN, scratchFolder, type Harness } from './support/harness';
import { clearGitFault, git, gitWrapper, worktreePaths } from './support/world';

let h: Harness;
let gitFault: string;
const cleanups: (() => Promise<void> | void)[] = [];
const browser = browserPerFile();

beforeAll(async () => {
  // Removing a worktree fails until the test clears the fault: an archive waits for an operator.
  gitFault = gitWrapper(await scratchFolder(cleanups), { failSubcommand: 'worktree remove', failTimes: 1000 });
  h = await createHarness({ gitBinary: gitFault });
});
afterAll(async () => {
  await h?.close();
  for (const c of cleanups.reverse()) await c();
});

const WAIT = { timeout: 30_000 };

async function asOperator(): Promise<Page> {
  const { page } = await browser.page(h.baseUrl);
  await signIn(page, OPERATOR_TOKEN, 'operator');
  return page;
}

const shownError = async (page: Page) => ({
  codes: await attributesNow(page.getByTestId('error'), 'data-code'),
  text: await textNow(page.getByTestId('error')),
});

describe('the operator pages in a browser: their actions', () => {
  it('an operator cancels a cleanup job waiting for one: the page and the API say cancelled, and its buttons are gone', async () => {
    const w = await taskWithCommits(h, 'cancel', []);
    const { operationId } = await archive(h, w.taskId);
    await waitForJob(h, operationId, ['needs_operator']);

    const page = await asOperator();
    await page.getByTestId('nav-cleanup-jobs').click();
    const row = page.locator(`[data-testid=cleanup-job][data-job-id="${operationId}"]`);
    await expect.poll(() => textNow(row.getByTestId('job-state')), WAIT).toBe('needs_operator');
    await row.getByTestId('job-cancel').click();
    await expect.poll(() => textNow(row.getByTestId('job-state')), WAIT).toBe('cancelled');
    expect((await h.api('GET', `/v1/cleanup-jobs/${operationId}`)).body.state).toBe('cancelled');
    expect(await row.getByTestId('job-cancel').count()).toBe(0);
    expect(await row.getByTestId('job-retry').count()).toBe(0);
    // Nothing was removed: the worktree the job could not remove is still registered.
    expect(worktreePaths(w.repo)).toContain(w.worktree);
  });

  it('the hosts page shows the live host and its disk; an idle release says in words why it cannot run and why a task is kept, and releases an idle task', async () => {
    clearGitFault(gitFault);
    const idle = await taskWithCommits(h, 'idle', []);
    writeFileSync(path.join(idle.worktree, 'draft.txt'), 'kept through the release\n');
    const pinned = await taskWithCommits(h, 'pinned', []);
    expect((await h.api('POST', `/v1/tasks/${pinned.taskId}/pin`)).status).toBe(200);

    const page = await asOperator();
    await page.getByTestId('nav-hosts').click();
    const host = page.locator(`[data-testid=host][data-host-id="${h.config.hostId}"]`);
    await expect.poll(() => textNow(host.getByTestId('host-live')), WAIT).toBe('live');
    // The disk is measured by the host's worker: Refresh until it is, as a person would.
    await expect
      .poll(async () => {
        const text = await textNow(host.getByTestId('host-disk'));
        if (!text.includes('free of')) await page.getByTestId('hosts-refresh').click();
        return text;
      }, WAIT)
      .toMatch(/^\d+\.\d GiB free of \d+\.\d GiB; workspaces \d+\.\d GiB/);

    // With the service's own threshold (7 days): nothing is that idle, and the page says so in words.
    const result = page.getByTestId('idle-release-result');
    await host.getByTestId('idle-release-dry').click();
    await expect
      .poll(() => textNow(result), WAIT)
      .toContain('nothing: no workspace of this host is idle for that long');
    // A threshold the API refuses: its message and what to do, in words; nothing released.
    await page.getByTestId('idle-for-minutes').fill('-5');
    await host.getByTestId('idle-release').click();
    await expect.poll(async () => (await shownError(page)).codes.length, WAIT).toBe(1);
    const refused = await shownError(page);
    expect(refused.text).toContain('Change what was asked and send it again.');
    expect(refused.text.length).toBeGreaterThan('Change what was asked and send it again.'.length + 5);
    expect(worktreePaths(idle.repo)).toContain(idle.worktree);

    // Idle for at least no time: the dry run names the idle task, and the pinned one kept, in words.
    await page.getByTestId('idle-for-minutes').fill('0');
    await host.getByTestId('idle-release-dry').click();
    await expect.poll(() => textNow(result), WAIT).toContain(idle.taskId);
    expect(await textNow(result.getByTestId('idle-kept'))).toContain(`${pinned.taskId}: pinned`);
    expect(worktreePaths(idle.repo)).toContain(idle.worktree);

    await host.getByTestId('idle-release').click();
    await expect.poll(() => textNow(result.getByTestId('idle-released')), WAIT).toContain('its work saved');
    expect(await textNow(result)).toContain('Idle release released');
    const jobs = (await h.api('GET', `/v1/cleanup-jobs?taskId=${idle.taskId}&trigger=idle_release`)).body.items;
    await waitForJob(h, jobs[0].operationId);
    expect(worktreePaths(idle.repo)).toEqual([idle.repo]);
    const [saved] = await savedWorkOf(h, idle.repoId, idle.taskId);
    expect(git(idle.repo, 'show', `${saved.commit}:draft.txt`)).toBe('kept through the release');
    expect(worktreePaths(pinned.repo)).toContain(pinned.worktree);
  });
});

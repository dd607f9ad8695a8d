/**
 * The web console in a real browser (issue 66), the operator's side and the live connection: an
 * operator retries a cleanup job that waits for one, which a user can neither see nor do (the API
 * refuses that token anyway); a reload keeps the page and the sign-in; a gateway restarted while
 * the page is open is followed back to `live`, with what changed meanwhile, without a reload. The
 * page talks to a gateway process of its own, on a port it keeps across the restart.
 */
import type { ChildProcess } from 'node:child_process';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attributesNow, browserPerFile, signIn, textNow } from './support/browser';
import { archive, waitForJob } from './support/cleanup';
import { createHarness, freePort, OPERATOR_TOKEN, scratchFolder, USER_TOKEN, type Harness } from './support/harness';
import { agentEnded, createTask, launch, registerRepo } from './support/scenario';
import { clearGitFault, gitWrapper, makeRepo, worktreePaths } from './support/world';

let h: Harness;
let gitFault: string;
let port: number;
let gateway: { child: ChildProcess; url: string };
const cleanups: (() => Promise<void> | void)[] = [];
const browser = browserPerFile();

beforeAll(async () => {
  // Removing a worktree fails until the test clears the fault: an archive waits for an operator.
  gitFault = gitWrapper(await scratchFolder(cleanups), { failSubcommand: 'worktree remove', failTimes: 1000 });
  h = await createHarness({ gitBinary: gitFault });
  port = await freePort();
  gateway = await h.spawnGateway({ TWS_API_PORT: String(port) });
});
afterAll(async () => {
  await h?.close();
  for (const c of cleanups.reverse()) await c();
});

const WAIT = { timeout: 30_000 };
const markWindow = (page: Page) => page.evaluate('window.__notReloaded = true');
const stillTheSameWindow = (page: Page) => page.evaluate('window.__notReloaded === true');
/** What the page keeps in its tab's sessionStorage and in localStorage (values only). */
const storedValues = async (page: Page) => ({
  session: (await page.evaluate('Object.values(sessionStorage)')) as string[],
  local: (await page.evaluate('Object.values(localStorage)')) as string[],
});

/** A task whose archive waits for an operator: its worktree cannot be removed. */
async function archiveWaitingForOperator(name: string) {
  const repo = makeRepo(h.scratch, name);
  const taskId = await createTask(h, [await registerRepo(h, repo, name)], { title: `stuck ${name}` });
  const launched = await launch(h, taskId, { command: ['true'] });
  expect(launched.status, JSON.stringify(launched.body)).toBe(201);
  await agentEnded(h, launched.body.sessionId);
  const { operationId } = await archive(h, taskId);
  await waitForJob(h, operationId, ['needs_operator']);
  return { repo, operationId };
}

const jobState = async (operationId: string) =>
  (await h.pool.query<{ state: string }>('SELECT state FROM cleanup_jobs WHERE operation_id = $1', [operationId]))
    .rows[0]?.state;

describe('the console in a browser: operators, reloads and a restarted gateway', () => {
  it('a cleanup job waiting for an operator: a user has no way to it and the API refuses that token; the operator retries it and it ends', async () => {
    const { repo, operationId } = await archiveWaitingForOperator('stuck');

    // The user: no operator links, no retry on the operator's page, and the route refused anyway.
    const asUser = (await browser.page(gateway.url)).page;
    await signIn(asUser, USER_TOKEN, 'user');
    expect(await asUser.getByTestId('nav-board').count()).toBe(1);
    expect(await asUser.getByTestId('nav-cleanup-jobs').count()).toBe(0);
    expect(await asUser.getByTestId('nav-hosts').count()).toBe(0);
    // Typed into the address bar: the board gives way to the page the hash names, with no job on it.
    await expect.poll(() => asUser.getByTestId('column-running').count(), WAIT).toBe(1);
    await asUser.goto('/#/cleanup-jobs');
    await expect.poll(() => asUser.getByTestId('column-running').count(), WAIT).toBe(0);
    expect(await asUser.getByTestId('cleanup-job').count()).toBe(0);
    expect(await asUser.getByTestId('job-retry').count()).toBe(0);
    const { session } = await storedValues(asUser);
    expect(session).toEqual([USER_TOKEN]);
    const refused = await fetch(`${gateway.url}/v1/cleanup-jobs/${operationId}/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session[0]}` },
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    expect(await jobState(operationId)).toBe('needs_operator');

    // The operator: the job is listed as waiting; once the fault is gone, a retry ends it.
    const asOperator = (await browser.page(gateway.url)).page;
    await signIn(asOperator, OPERATOR_TOKEN, 'operator');
    await asOperator.getByTestId('nav-cleanup-jobs').click();
    const row = asOperator.locator(`[data-testid=cleanup-job][data-job-id="${operationId}"]`);
    await expect.poll(() => textNow(row.getByTestId('job-state')), WAIT).toBe('needs_operator');
    clearGitFault(gitFault);
    await row.getByTestId('job-retry').click();
    await expect.poll(() => textNow(row.getByTestId('job-state')), { timeout: 60_000 }).toBe('succeeded');
    expect(await jobState(operationId)).toBe('succeeded');
    expect(worktreePaths(repo)).toEqual([repo]);
  });

  it('a reload keeps the page and the sign-in; a gateway restarted under the open page is followed back to live, with what changed meanwhile', async () => {
    const repo = makeRepo(h.scratch, 'live');
    const repositoryId = await registerRepo(h, repo, 'live');
    const archived = await createTask(h, [repositoryId], { title: 'archived before the reload' });
    const { operationId } = await archive(h, archived);
    await waitForJob(h, operationId);
    const { page } = await browser.page(gateway.url);
    await signIn(page, OPERATOR_TOKEN, 'operator');
    await page.getByTestId('nav-cleanup-jobs').click();
    const row = page.locator(`[data-testid=cleanup-job][data-job-id="${operationId}"]`);
    await expect.poll(() => textNow(row.getByTestId('job-state')), WAIT).toBe('succeeded');

    await page.reload();
    expect(new URL(page.url()).hash).toBe('#/cleanup-jobs');
    await expect.poll(() => textNow(page.getByTestId('role')), WAIT).toBe('operator');
    await expect.poll(() => textNow(row.getByTestId('job-state')), WAIT).toBe('succeeded');
    expect(await storedValues(page)).toEqual({ session: [OPERATOR_TOKEN], local: [] });
    expect(page.url()).not.toContain(OPERATOR_TOKEN);

    await page.getByTestId('nav-board').click();
    const connection = page.getByTestId('connection');
    await expect.poll(() => attributesNow(connection, 'data-state'), WAIT).toEqual(['live']);
    await markWindow(page);

    gateway.child.kill('SIGKILL');
    await expect.poll(() => attributesNow(connection, 'data-state'), WAIT).toEqual(['lost']);
    expect(await textNow(connection)).toContain('Connection to the service lost');
    // Meanwhile another gateway of the same service takes a new task.
    const madeMeanwhile = await createTask(h, [repositoryId], { title: 'made while the gateway was away' });
    gateway = await h.spawnGateway({ TWS_API_PORT: String(port) });

    await expect.poll(() => attributesNow(connection, 'data-state'), { timeout: 60_000 }).toEqual(['live']);
    const fresh = page.locator(`[data-testid=task-card][data-task-id="${madeMeanwhile}"]`);
    await expect.poll(() => textNow(fresh), WAIT).toContain('made while the gateway was away');
    expect(await stillTheSameWindow(page)).toBe(true);
  });
});

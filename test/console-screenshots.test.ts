/**
 * The console as the README shows it: a board with a task in each of its usual states, and a
 * task page with an agent's diff and the merge preview. With CONSOLE_SCREENSHOTS=1 (`make
 * screenshots`) the two views are written to docs/images/ as PNGs (1280x800); without it the test
 * still checks that what the pictures would show is there and that no error is on the page.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskDirName } from '../domain/task-layout';
import { attributesNow, browserPerFile, signIn, textNow } from './support/browser';
import { commitIn, finish } from './support/finishing';
import { createHarness, USER_TOKEN, type Harness } from './support/harness';
import { agentEnded, agentOutputUntil, createTask, launch, registerRepo } from './support/scenario';
import { makeRepo } from './support/world';

let h: Harness;
const browser = browserPerFile();

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const WAIT = { timeout: 30_000 };
const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? path.resolve('docs/images') : null;

async function screenshot(page: Page, name: string): Promise<void> {
  await expect.poll(() => page.getByText('Reading…').count(), WAIT).toBe(0);
  expect(await page.getByTestId('error').count(), 'an error shown on the page').toBe(0);
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

/** The agent's work on a small web service: a new endpoint, its test, and the README's line for it. */
const AGENT_WORK = String.raw`
set -e
mkdir -p src test
cat > src/health.js <<'EOF'
// GET /health: 200 while the database answers, 503 when it does not.
export async function health(db) {
  try {
    await db.query('select 1');
    return { status: 200, body: { ok: true } };
  } catch {
    return { status: 503, body: { ok: false } };
  }
}
EOF
cat > test/health.test.js <<'EOF'
import { health } from '../src/health.js';
test('503 when the database is down', async () => {
  expect((await health({ query: () => Promise.reject(new Error('down')) })).status).toBe(503);
});
EOF
printf '# web\n\nA small web service.\n\n- GET /health answers 200 while the database does.\n' > README.md
git add -A
git -c user.name=agent -c user.email=agent@example.com commit -q -m 'Add a health check endpoint'
echo 'committed: Add a health check endpoint'
`;

/** A task on a repository whose agent ended, with one commit of these files on its branch. */
async function taskWith(repoId: string, repo: string, title: string, files: Record<string, string>): Promise<string> {
  const taskId = await createTask(h, [repoId], { title });
  const launched = await launch(h, taskId, { command: ['true'] });
  expect(launched.status, JSON.stringify(launched.body)).toBe(201);
  await agentEnded(h, launched.body.sessionId);
  commitIn(path.join(h.config.workspaceRoot, taskDirName(taskId), path.basename(repo)), files, title);
  return taskId;
}

describe('the console, pictured', () => {
  it('a board with running, idle, merged and conflicting tasks (one needs attention), and a task page with its diff and merge preview', async () => {
    const repo = makeRepo(h.scratch, 'web', { files: { 'README.md': '# web\n\nA small web service.\n' } });
    const repoId = await registerRepo(h, repo, 'web');

    // Idle, with a diff to review: the agent's commit.
    const reviewed = await createTask(h, [repoId], { title: 'Add a health check endpoint' });
    const work = await launch(h, reviewed, { command: ['sh', '-c', AGENT_WORK] });
    expect(work.status, JSON.stringify(work.body)).toBe(201);
    expect((await agentEnded(h, work.body.sessionId)).execution?.exitCode).toBe(0);

    // Merged.
    const docs = makeRepo(h.scratch, 'docs');
    const merged = await taskWith(await registerRepo(h, docs, 'docs'), docs, 'Describe how to contribute', {
      'CONTRIBUTING.md': 'Open a pull request.\n',
    });
    expect((await finish(h, 'POST', `/v1/tasks/${merged}/merge`, { strategy: 'squash' })).body).toMatchObject({
      state: 'merged',
    });
    // Conflicting with its base, which moved on.
    const config = makeRepo(h.scratch, 'config', { files: { 'config.json': '{ "port": 80 }\n' } });
    const clash = await taskWith(await registerRepo(h, config, 'config'), config, 'Move the service to port 8080', {
      'config.json': '{ "port": 8080 }\n',
    });
    commitIn(config, { 'config.json': '{ "port": 3000 }\n' }, 'meanwhile on main');
    // Its merge, tried, is refused for the conflict: the task needs a person.
    const refused = await h.api('POST', `/v1/tasks/${clash}/merge`, { strategy: 'squash' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    // Running: an agent still at work.
    const running = await createTask(h, [repoId], { title: 'Write the release notes' });
    const writer = await launch(h, running, {
      command: ['sh', '-c', 'for i in 1 2 3; do echo "drafting section $i"; done; sleep 600'],
    });
    expect(writer.status, JSON.stringify(writer.body)).toBe(201);
    await agentOutputUntil(h, writer.body.executionId, 'drafting section 3');

    const { page } = await browser.page(h.baseUrl);
    await page.setViewportSize({ width: 1280, height: 800 });
    await signIn(page, USER_TOKEN, 'user');
    const cardIn = (column: string, taskId: string) =>
      page.locator(`[data-testid=column-${column}] [data-testid=task-card][data-task-id="${taskId}"]`);
    for (const [column, taskId] of [
      ['running', running],
      ['idle', reviewed],
      ['attention', clash],
      ['merged', merged],
    ] as const)
      await expect.poll(() => cardIn(column, taskId).count(), WAIT).toBe(1);
    await screenshot(page, 'console-board');

    // The reviewed task's page, at its diff (the README's file chosen) and merge preview.
    await page.goto(`/#/tasks/${reviewed}`);
    await expect.poll(() => attributesNow(page.getByTestId('diff-file'), 'data-path'), WAIT).toHaveLength(3);
    await page.locator('[data-testid=diff-file][data-path="src/health.js"]').click();
    await expect.poll(() => textNow(page.getByTestId('diff-view')), WAIT).toContain("await db.query('select 1');");
    await expect.poll(() => attributesNow(page.getByTestId('merge-preview'), 'data-outcome'), WAIT).toEqual(['clean']);
    await page.getByTestId('diff-refresh').evaluate((el) => el.closest('.panel')!.scrollIntoView({ block: 'start' }));
    await screenshot(page, 'console-task');
  });
});

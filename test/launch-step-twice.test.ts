/**
 * One first launch's host step run twice at once, as it is when the engine comes back after a
 * restart and the workflow task that ran it timed out: the replay runs the step again in the same
 * process while the first run, whose result nobody will read, is still making the worktree. The
 * two must end as one after the other: one worktree, one agent, the same answer, nothing undone.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHostActivities, createRecordActivities } from '../activities';
import { publishedPlan } from '../domain/launch';
import { OWNERSHIP_MARKER_FILE, taskDirName } from '../domain/task-layout';
import { giveNewWorkspace } from '../executors/host/agent-identity';
import { newWorkspaceUid } from '../executors/host/agent-uid';
import { worktreeIdentity } from '../git/worktrees';
import { createHarness, type Harness } from './support/harness';
import { createTask, registerRepo, SLEEPER } from './support/scenario';
import { gitWrapper, makeRepo, processAlive, slowGitStepBegun, worktreePaths } from './support/world';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

/** A worktree launch of the task admitted as its first (it materializes), as the launch workflow admits it. */
async function admitFirstLaunch(records: ReturnType<typeof createRecordActivities>, taskId: string) {
  const plan = await records.admitLaunch({
    sessionId: randomUUID(),
    taskId,
    executorType: 'worktree',
    agentProfile: 'shell',
    command: SLEEPER,
    name: null,
    hostId: h.config.hostId,
  });
  expect(plan.role).toBe('materialized');
  return plan;
}

it('two runs of one first launch step at once end as one after the other: one worktree, one agent, both answered alike', async () => {
  const repo = makeRepo(h.scratch, 'twice');
  const taskId = await createTask(h, [await registerRepo(h, repo, 'twice')]);
  // The first run's `git worktree add` takes a while: the second begins meanwhile.
  const wrapper = gitWrapper(h.scratch, { sleepOnWorktreeAdd: 2 });
  const deps = {
    pool: h.pool,
    config: { ...h.config, gitBinary: wrapper },
    logger: pino({ level: process.env.TWS_TEST_LOG ?? 'silent' }),
  };
  const records = createRecordActivities(deps);
  const host = createHostActivities(deps);
  const plan = await admitFirstLaunch(records, taskId);
  const input = {
    plan,
    command: SLEEPER,
    executionId: randomUUID(),
    site: 'launch' as const,
    validate: false,
    markRunningFrom: ['starting' as const],
  };
  const first = host.materializeAndLaunch(input);
  await slowGitStepBegun(wrapper, 'add');
  const second = host.materializeAndLaunch(input);
  const [a, b] = await Promise.allSettled([first, second]);
  expect(a.status, JSON.stringify(a)).toBe('fulfilled');
  expect(b.status, JSON.stringify(b)).toBe('fulfilled');
  const [x, y] = [a, b].map((r) => (r as PromiseFulfilledResult<{ executionId: string; pid: number }>).value);
  expect(y).toEqual(x);
  expect(processAlive(x!.pid)).toBe(true);
  const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'twice');
  expect(existsSync(worktree)).toBe(true);
  expect(worktreePaths(repo)).toContain(worktree);
  const rows = await h.pool.query('SELECT pid, status FROM executions WHERE session_id = $1', [plan.sessionId]);
  expect(rows.rows).toEqual([{ pid: x!.pid, status: 'running' }]);
  process.kill(-x!.pid, 'SIGKILL');
});

it("a new workspace given to its agent's uid keeps every pointer git follows the service's: the service's git reads it at every moment", async () => {
  const repo = makeRepo(h.scratch, 'given');
  const taskId = await createTask(h, [await registerRepo(h, repo, 'given')]);
  const deps = { pool: h.pool, config: h.config, logger: pino({ level: 'silent' }) };
  const plan = await admitFirstLaunch(createRecordActivities(deps), taskId);
  const made = await createHostActivities(deps).materializeWorkspace(plan);
  const published = publishedPlan(plan, made);
  await giveNewWorkspace(deps, published, await newWorkspaceUid(deps, published));
  const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'given');
  const uid = lstatSync(worktree).uid;
  // Given: the worktree and what is checked out in it.
  expect(uid).toBeGreaterThan(0);
  expect(lstatSync(path.join(worktree, 'README.md')).uid).toBe(uid);
  // Never given, not for a moment: the worktree's `.git` file, its registration's files, the marker.
  const gitFile = path.join(worktree, '.git');
  const adminDir = readFileSync(gitFile, 'utf8')
    .replace(/^gitdir: /, '')
    .trim();
  expect(lstatSync(adminDir).uid).toBe(uid);
  for (const pointer of [
    gitFile,
    path.join(adminDir, 'gitdir'),
    path.join(adminDir, 'commondir'),
    path.join(h.config.workspaceRoot, taskDirName(taskId), OWNERSHIP_MARKER_FILE),
  ])
    expect(lstatSync(pointer).uid, pointer).toBe(0);
  // So the service's git reads it (it refuses a worktree whose pointers are not its own).
  expect(await worktreeIdentity(worktree, { binary: h.config.gitBinary })).toMatchObject({ head: made[0]!.headCommit });
});

/**
 * One first launch's host step run twice at once, as it is when the engine comes back after a
 * restart and the workflow task that ran it timed out: the replay runs the step again in the same
 * process while the first run, whose result nobody will read, is still making the worktree. The
 * two must end as one after the other: one worktree, one agent, the same answer, nothing undone.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHostActivities, createRecordActivities } from '../activities';
import { taskDirName } from '../domain/task-layout';
import { createHarness, type Harness } from './support/harness';
import { createTask, registerRepo, SLEEPER } from './support/scenario';
import { gitWrapper, makeRepo, processAlive, worktreePaths } from './support/world';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

it('two runs of one first launch step at once end as one after the other: one worktree, one agent, both answered alike', async () => {
  const repo = makeRepo(h.scratch, 'twice');
  const taskId = await createTask(h, [await registerRepo(h, repo, 'twice')]);
  // The first run's `git worktree add` takes a while: the second begins meanwhile.
  const deps = {
    pool: h.pool,
    config: { ...h.config, gitBinary: gitWrapper(h.scratch, { sleepOnWorktreeAdd: 2 }) },
    logger: pino({ level: 'silent' }),
  };
  const records = createRecordActivities(deps);
  const host = createHostActivities(deps);
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
  const input = {
    plan,
    command: SLEEPER,
    executionId: randomUUID(),
    site: 'launch' as const,
    validate: false,
    markRunningFrom: ['starting' as const],
  };
  const first = host.materializeAndLaunch(input);
  await new Promise((resolve) => setTimeout(resolve, 300));
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

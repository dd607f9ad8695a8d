/**
 * The operator CLI (`npx tws`, issue 14 part 3) against a running system, as a script would use
 * it: the package's bin as a process, `--json` output parsed, exit codes checked.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskDirName } from '../domain/task-layout';
import { archive, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, launch, registerRepo } from './support/scenario';
import { makeRepo } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function tws(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(path.resolve('bin/tws.mjs'), args, {
      cwd: h.scratch, // any folder: the bin finds its own install
      env: { ...process.env, TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN, ...env },
      encoding: 'utf8',
    });
    return { code: 0, stdout, stderr };
  } catch (err: any) {
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

async function stoppedTask(name: string) {
  const dir = makeRepo(h.scratch, name);
  const taskId = await createTask(h, [await registerRepo(h, dir, name)]);
  const res = await launch(h, taskId, { command: ['sh', '-c', 'echo hello from the agent; sleep 600'] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return {
    taskId,
    sessionId: res.body.sessionId as string,
    worktree: path.join(h.config.workspaceRoot, taskDirName(taskId), name),
  };
}

describe('tws', () => {
  it('pin, unpin and idle-release: a pinned task is kept, the dry run names it once unpinned; a bad duration exits 2', async () => {
    const t = await stoppedTask('cli-idle');
    expect((await h.api('POST', `/v1/sessions/${t.sessionId}/stop`)).status).toBe(200);
    const pinned = await tws(['pin', t.taskId, '--json']);
    expect(pinned.code, pinned.stderr).toBe(0);
    expect(JSON.parse(pinned.stdout)).toMatchObject({ id: t.taskId, pinned: true });
    const kept = await tws(['idle-release', '--dry-run', '--idle-for', '1ms', '--host', h.config.hostId, '--json']);
    expect(kept.code, kept.stderr).toBe(0);
    expect(JSON.parse(kept.stdout).kept).toContainEqual({ taskId: t.taskId, reason: 'pinned' });
    expect((await tws(['unpin', t.taskId])).stdout).toContain('unpinned');
    const human = await tws(['idle-release', '--dry-run', '--idle-for', '1ms', '--host', h.config.hostId]);
    expect(human.stdout).toMatch(/^would release:/);
    expect(human.stdout).toContain(t.taskId);
    expect(existsSync(t.worktree)).toBe(true);
    const bad = await tws(['idle-release', '--idle-for', 'a week']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--idle-for must be a duration/);
  });

  it('jobs and job: --json is the API body; the table names the job; a missing job exits 4', async () => {
    const t = await stoppedTask('cli-jobs');
    const { operationId } = await archive(h, t.taskId);
    await waitForJob(h, operationId);

    const jobs = await tws(['jobs', '--task', t.taskId, '--json']);
    expect(jobs.code, jobs.stderr).toBe(0);
    expect(JSON.parse(jobs.stdout)).toEqual([
      expect.objectContaining({ operationId, taskId: t.taskId, trigger: 'archive', state: 'succeeded' }),
    ]);
    const human = await tws(['jobs', '--state', 'succeeded']);
    expect(human.code).toBe(0);
    expect(human.stdout.split('\n')[0]).toMatch(/^operationId\s+taskId\s+trigger\s+state/);
    expect(human.stdout).toContain(operationId);

    const job = await tws(['job', operationId, '--json']);
    expect(JSON.parse(job.stdout)).toMatchObject({
      operationId,
      state: 'succeeded',
      report: { worktrees: [{ outcome: 'removed' }] },
    });
    const missing = await tws(['job', '00000000-0000-4000-8000-000000000000']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/^tws: not found/);
  });

  it('retry and cancel of a finished job are refused with exit 1 and the reason; bad ids and commands exit 2 without a call', async () => {
    const t = await stoppedTask('cli-refused');
    const { operationId } = await archive(h, t.taskId);
    await waitForJob(h, operationId);
    const retry = await tws(['retry', operationId]);
    expect(retry).toMatchObject({ code: 1, stdout: '' });
    expect(retry.stderr).toContain('cleanup_job_not_retryable');
    const cancel = await tws(['cancel', operationId]);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toContain('cleanup_job_finished');
    expect((await h.api('GET', `/v1/cleanup-jobs/${operationId}`)).body.state).toBe('succeeded');

    for (const args of [
      ['retry'],
      ['cancel', 'not-an-id'],
      ['frobnicate'],
      ['jobs', '--state'],
      ['jobs', '--bogus'],
      [],
    ]) {
      expect((await tws(args)).code, args.join(' ')).toBe(2);
    }
    // A user token is not an operator's: the service refuses (403), exit 1.
    expect((await tws(['sweep', '--dry-run'], { TWS_OPERATOR_TOKEN: USER_TOKEN })).code).toBe(1);
    // Nothing listens: exit 3, one line, no stack.
    const down = await tws(['jobs'], { TWS_API_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(3);
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('sessions, logs and abandon work on a task; sweep --dry-run removes nothing', async () => {
    const t = await stoppedTask('cli-sessions');
    const sessions = await tws(['sessions', t.taskId, '--json']);
    expect(sessions.code, sessions.stderr).toBe(0);
    expect(JSON.parse(sessions.stdout)).toEqual([expect.objectContaining({ id: t.sessionId, state: 'running' })]);
    const sessionTable = await tws(['sessions', t.taskId]);
    expect(sessionTable.stdout.split('\n')[0]).toMatch(/^id\s+state\s+role/);
    expect(sessionTable.stdout).toContain(t.sessionId);

    let logs = { code: -1, stdout: '', stderr: '' };
    for (let i = 0; i < 50 && !logs.stdout.includes('hello from the agent'); i++) {
      logs = await tws(['logs', t.sessionId, '--tail', '5']);
      if (!logs.stdout.includes('hello')) await new Promise((r) => setTimeout(r, 100));
    }
    expect(logs).toMatchObject({ code: 0, stdout: 'hello from the agent\n' });

    expect((await h.api('POST', `/v1/sessions/${t.sessionId}/stop`)).status).toBe(200);
    const abandoned = await tws(['abandon', t.taskId, '--json']);
    expect(abandoned.code, abandoned.stderr).toBe(0);
    expect(JSON.parse(abandoned.stdout)).toMatchObject({ state: 'succeeded' });
    expect(existsSync(t.worktree)).toBe(true);
    expect(
      (await h.pool.query('SELECT status FROM environment_repos WHERE worktree_path = $1', [t.worktree])).rows,
    ).toEqual([{ status: 'abandoned' }]);

    const sweep = await tws(['sweep', '--dry-run', '--json']);
    expect(sweep.code).toBe(0);
    expect(JSON.parse(sweep.stdout)).toMatchObject({ dryRun: true, removed: [] });
    expect(existsSync(t.worktree)).toBe(true);
  });
});

/**
 * Resume is a launch of an existing session: every row of the admission table
 * for a resume, with the agent's working directory read from /proc and the source checkout's
 * files fingerprinted before and after. The agent writes a file into its working directory, so
 * an agent started in the source checkout would change its fingerprint.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskDirName } from '../domain/task-layout';
import { archive, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import {
  createTask,
  expectSafeError,
  lastResumeRun,
  launch,
  pidOf,
  registerRepo,
  send,
  waitUntil,
} from './support/scenario';
import { ExecutorTypeAttr, PhaseAttr, SessionIdAttr, TaskIdAttr } from '../domain/search-attributes';
import { branches, fingerprint, git, makeRepo, processAlive, processCwd, worktreePaths } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

/** Leaves a trace where it runs, then waits. */
const AGENT = ['sh', '-c', 'echo here > agent-was-here.txt; exec sleep 600'];
const sourceFiles = (repo: string) => fingerprint(repo, ['.git']);

async function taskWithAgent(executorType: 'worktree' | 'local' = 'worktree') {
  const name = `resume-${++n}`;
  const repo = makeRepo(h.scratch, name);
  const taskId = await createTask(h, [await registerRepo(h, repo, name)]);
  const first = await launch(h, taskId, { executorType, command: AGENT });
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  const pid = await pidOf(h, first.body.sessionId);
  const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), name);
  const cwd = executorType === 'local' ? repo : worktree;
  await waitUntil(async () => existsSync(path.join(cwd, 'agent-was-here.txt')), 'the first agent wrote its trace');
  if (executorType === 'local') git(repo, 'clean', '-fdq'); // the local agent's trace; the checkout is the baseline again
  return {
    repo,
    taskId,
    sessionId: first.body.sessionId as string,
    environmentId: first.body.taskEnvironmentId as string,
    pid,
    worktree,
    name,
  };
}

const resume = (sessionId: string, key?: string) =>
  send(h.baseUrl, 'POST', `/v1/sessions/${sessionId}/resume`, {}, key ? { key } : {});
const sessionRow = async (id: string) =>
  (await h.pool.query('SELECT state, resume_count, environment_id, role FROM sessions WHERE id = $1', [id])).rows[0];
const executionsOf = async (id: string) =>
  (await h.pool.query('SELECT id, status FROM executions WHERE session_id = $1 ORDER BY started_at', [id])).rows;

/** A resume refused by admission changes nothing: the session row, its executions and the previous agent. */
async function expectRefusedResume(t: { sessionId: string; repo: string; pid?: number }, code: string) {
  const [row, execs, files] = [await sessionRow(t.sessionId), await executionsOf(t.sessionId), sourceFiles(t.repo)];
  const res = await resume(t.sessionId);
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expectSafeError(res.body, code, [t.repo, h.config.workspaceRoot]);
  expect(await sessionRow(t.sessionId)).toEqual(row);
  expect(await executionsOf(t.sessionId)).toEqual(execs);
  expect(sourceFiles(t.repo)).toBe(files);
  if (t.pid) expect(processAlive(t.pid)).toBe(true);
}

describe('a resume is admitted like a launch', () => {
  it('ready: restarts the agent in the canonical worktree, counted once', async () => {
    const t = await taskWithAgent();
    const files = sourceFiles(t.repo);
    const res = await resume(t.sessionId);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(processAlive(t.pid)).toBe(false);
    expect(processCwd(res.body.execution.pid)).toBe(t.worktree);
    expect(await sessionRow(t.sessionId)).toMatchObject({
      state: 'running',
      resume_count: 1,
      role: 'materialized',
      environment_id: t.environmentId,
    });
    expect(sourceFiles(t.repo)).toBe(files);
    // The run is found in the Temporal UI like a launch: by task, session and executor, with its phase.
    const attributes = (await h.temporal.workflow.getHandle(await lastResumeRun(h, t.sessionId)).describe())
      .typedSearchAttributes;
    expect([
      attributes.get(TaskIdAttr),
      attributes.get(SessionIdAttr),
      attributes.get(ExecutorTypeAttr),
      attributes.get(PhaseAttr),
    ]).toEqual([t.taskId, t.sessionId, 'worktree', 'running']);
  });

  it.each(['archive then unarchive', 'environment reset'])(
    'released by %s: re-materializes through the election, never the source checkout',
    async (how) => {
      const t = await taskWithAgent();
      const branchesBefore = branches(t.repo);
      git(t.worktree, 'clean', '-fdq'); // the agent's trace: a dirty worktree would be kept
      if (how === 'environment reset') {
        await h.api('POST', `/v1/sessions/${t.sessionId}/stop`);
        const reset = await h.api('POST', `/v1/tasks/${t.taskId}/environment/reset`, undefined, OPERATOR_TOKEN);
        expect(reset.status, JSON.stringify(reset.body)).toBe(202);
        await waitForJob(h, reset.body.operationId);
      } else {
        await waitForJob(h, (await archive(h, t.taskId)).operationId);
        expect((await h.api('POST', `/v1/tasks/${t.taskId}/unarchive`)).status).toBe(200);
      }
      expect(worktreePaths(t.repo)).toEqual([t.repo]);
      expect((await h.api('GET', `/v1/sessions/${t.sessionId}/workspace`)).body).toMatchObject({
        source: 'released',
        workspacePath: null,
      });
      const files = sourceFiles(t.repo);

      const res = await resume(t.sessionId);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(processCwd(res.body.execution.pid)).toBe(t.worktree);
      await waitUntil(
        async () => git(t.worktree, 'status', '--porcelain').includes('agent-was-here.txt'),
        'the agent wrote in its worktree',
      );
      expect(sourceFiles(t.repo)).toBe(files);
      expect(worktreePaths(t.repo)).toEqual([t.repo, t.worktree]);
      // The kept task branch is checked out again: no second branch.
      expect(branches(t.repo)).toEqual(branchesBefore);
      expect(await sessionRow(t.sessionId)).toMatchObject({
        state: 'running',
        resume_count: 1,
        role: 'materialized',
        environment_id: t.environmentId,
      });
      const env = (
        await h.pool.query('SELECT status, materialized, workspace_path FROM task_environments WHERE id = $1', [
          t.environmentId,
        ])
      ).rows[0];
      expect(env).toEqual({ status: 'ready', materialized: true, workspace_path: t.worktree });
      expect((await h.api('GET', `/v1/sessions/${t.sessionId}/workspace`)).body).toMatchObject({
        source: 'environment',
        workspacePath: t.worktree,
      });
      // A later launch attaches to what the resume materialized.
      const next = await launch(h, t.taskId, { command: AGENT });
      expect(next.body).toMatchObject({ role: 'attached', taskEnvironmentId: t.environmentId });
    },
  );

  it('creating: workspace_preparing, and nothing changes', async () => {
    const t = await taskWithAgent();
    const other = await launch(h, t.taskId, { command: AGENT });
    // Another session of the task is its environment's live materializer.
    await h.pool.query(`UPDATE task_environments SET status = 'creating', materializer_session_id = $2 WHERE id = $1`, [
      t.environmentId,
      other.body.sessionId,
    ]);
    await expectRefusedResume(t, 'workspace_preparing');
    await h.pool.query(`UPDATE task_environments SET status = 'ready' WHERE id = $1`, [t.environmentId]);
  });

  it('failed after materializing: workspace_reuse_unsafe, and nothing changes', async () => {
    const t = await taskWithAgent();
    await h.pool.query(`UPDATE task_environments SET status = 'failed' WHERE id = $1`, [t.environmentId]);
    await expectRefusedResume(t, 'workspace_reuse_unsafe');
  });

  it('archived: task_archived, and nothing changes', async () => {
    const t = await taskWithAgent();
    await h.api('POST', `/v1/sessions/${t.sessionId}/stop`);
    await waitForJob(h, (await archive(h, t.taskId)).operationId);
    await expectRefusedResume({ sessionId: t.sessionId, repo: t.repo }, 'task_archived');
  });

  it('an unsafe workspace (another branch checked out): refused by validation before the previous agent stops; nothing changes', async () => {
    const t = await taskWithAgent();
    git(t.worktree, 'checkout', '-q', '-b', 'elsewhere');
    await expectRefusedResume(t, 'workspace_reuse_unsafe');
    expect(processCwd(t.pid)).toBe(t.worktree);
  });

  it('a local session on a task that never materialized anything runs in the source checkout, as its launch did', async () => {
    const t = await taskWithAgent('local');
    const res = await resume(t.sessionId);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(processCwd(res.body.execution.pid)).toBe(t.repo);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    expect(await sessionRow(t.sessionId)).toMatchObject({ state: 'running', resume_count: 1, role: 'materialized' });
  });

  it('the same Idempotency-Key joins the same run; a refused run does not block the next resume', async () => {
    const t = await taskWithAgent();
    git(t.worktree, 'checkout', '-q', '-b', 'elsewhere');
    expect((await resume(t.sessionId)).status).toBe(409);
    git(t.worktree, 'checkout', '-q', '-');
    const key = randomUUID();
    const a = await resume(t.sessionId, key);
    const b = await resume(t.sessionId, key);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body.execution.id).toBe(a.body.execution.id);
    expect(await sessionRow(t.sessionId)).toMatchObject({ resume_count: 1 });
    expect((await executionsOf(t.sessionId)).map((e: { status: string }) => e.status)).toEqual(['stopped', 'running']);
  });
});

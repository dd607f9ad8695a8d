/**
 * The gateway process runs the launches and resumes it starts (eager workflow start on a worker
 * that shares its Temporal connection), and the worker process is its fallback: with the switch
 * off, and when the gateway dies in the middle of a launch.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskDirName } from '../domain/task-layout';
import { harnessesPerTest, type Harness } from './support/harness';
import { SLEEPER, admittedSession, createTask, lastResumeRun, pidOf, registerRepo } from './support/scenario';
import {
  branches,
  gitWrapper,
  makeRepo,
  processCwd,
  setGitSlow,
  slowGitStepBegun,
  worktreePaths,
} from './support/world';

const { harness, scratch } = harnessesPerTest();

/**
 * Whether the server handed the first workflow task back with the start (eager start), and the
 * pid of the process that ran each workflow task (a worker's identity is `<pid>@<host>`).
 */
async function whoRan(h: Harness, workflowId: string): Promise<{ eager: boolean; pids: number[] }> {
  const events = (await h.temporal.workflow.getHandle(workflowId).fetchHistory()).events!;
  return {
    eager: events[0]!.workflowExecutionStartedEventAttributes!.eagerExecutionAccepted === true,
    pids: events
      .filter((e) => e.workflowTaskStartedEventAttributes)
      .map((e) => Number.parseInt(e.workflowTaskStartedEventAttributes!.identity!, 10)),
  };
}

const launchBody = { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER };

describe('the gateway runs its launches', () => {
  it('with no worker process anywhere: a first launch, an attach and a resume each run in the gateway, in one workflow task', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const gateway = await h.spawnGateway();
    const repo = makeRepo(h.scratch, 'eager');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'eager')]);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'eager');

    const first = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, launchBody);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toMatchObject({ role: 'materialized', state: 'running' });
    const second = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, launchBody);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body).toMatchObject({
      role: 'attached',
      state: 'running',
      taskEnvironmentId: first.body.taskEnvironmentId,
    });
    const resumed = await gateway.api('POST', `/v1/sessions/${second.body.sessionId}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);

    for (const workflowId of [
      `launch/${first.body.sessionId}`,
      `launch/${second.body.sessionId}`,
      await lastResumeRun(h, second.body.sessionId),
    ]) {
      expect(await whoRan(h, workflowId), workflowId).toEqual({ eager: true, pids: [gateway.child.pid] });
    }
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
    expect(resumed.body.execution.id).not.toBe(second.body.executionId);
    for (const s of [first.body, second.body]) expect(processCwd(await pidOf(h, s.sessionId))).toBe(worktree);
  });

  it('switched off (TWS_GATEWAY_RUNS_LAUNCHES=0), it only starts them: the worker process runs them', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const worker = h.spawnWorker();
    const gateway = await h.spawnGateway({ TWS_GATEWAY_RUNS_LAUNCHES: '0' });
    const repo = makeRepo(h.scratch, 'plain');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'plain')]);
    const res = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, launchBody);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(await whoRan(h, `launch/${res.body.sessionId}`)).toEqual({ eager: false, pids: [worker.pid] });
    expect(processCwd(await pidOf(h, res.body.sessionId))).toBe(
      path.join(h.config.workspaceRoot, taskDirName(taskId), 'plain'),
    );
  });
});

describe('a gateway that dies during a first launch', () => {
  it('leaves it to the worker process: after the workflow task times out the worker runs it again, with one worktree, one branch and one agent', async () => {
    const dir = await scratch();
    const h = await harness({ gitBinary: gitWrapper(dir, { sleepOnWorktreeAdd: 2 }) }, { inProcessWorker: false });
    const worker = h.spawnWorker();
    const gateway = await h.spawnGateway();
    const repo = makeRepo(h.scratch, 'gateway-crash');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'gateway-crash')]);
    const pending = gateway.api('POST', `/v1/tasks/${taskId}/sessions`, launchBody).catch((err: Error) => err);
    const sessionId = await admittedSession(h, taskId);
    // Admitted, and the gateway's host step is inside `git worktree add` (2 s): kill it there.
    await slowGitStepBegun(h.config.gitBinary, 'add');
    gateway.child.kill('SIGKILL');
    expect(await pending).toBeInstanceOf(Error);
    setGitSlow(h.config.gitBinary, false); // the worker's re-run at git's own pace

    const result = await h.temporal.workflow.getHandle(`launch/${sessionId}`).result();
    expect(result).toMatchObject({ sessionId, role: 'materialized', state: 'running' });
    expect(await whoRan(h, `launch/${sessionId}`)).toEqual({ eager: true, pids: [gateway.child.pid, worker.pid] });
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'gateway-crash');
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
    expect(branches(repo).filter((b) => b !== 'main')).toHaveLength(1);
    expect((await h.pool.query('SELECT status FROM executions WHERE session_id = $1', [sessionId])).rows).toEqual([
      { status: 'running' },
    ]);
    expect((await h.api('GET', `/v1/sessions/${sessionId}`)).body.state).toBe('running');
    expect(processCwd(await pidOf(h, sessionId!))).toBe(worktree);
  });
});

/**
 * Agents you can see (issue 11): every exit is recorded with its status — noticed by the process
 * that started the agent, or collected from the supervising shim's status file by a worker that
 * comes back — and the agent's environment holds nothing of the service's.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { harnessesPerTest, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { killableWorker } from './support/processes';
import { createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';

const { harness, cleanups } = harnessesPerTest();

async function ended(h: Harness, sessionId: string): Promise<any> {
  let body: any;
  await waitUntil(async () => {
    body = (await h.api('GET', `/v1/sessions/${sessionId}`)).body;
    return body.execution?.state !== 'running';
  }, `the end of session ${sessionId}'s agent`, 30_000);
  return body;
}

describe('agent exits [issue 11]', () => {
  it('exit 0, exit 3 and a signal are each recorded with their fields, and the session says exited', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'exits');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'exits')]);
    const cases = [
      { command: ['sh', '-c', 'exit 0'], exitCode: 0, signal: null },
      { command: ['sh', '-c', 'exit 3'], exitCode: 3, signal: null },
      { command: ['sh', '-c', 'kill -TERM $$'], exitCode: null, signal: 'SIGTERM' },
    ];
    for (const c of cases) {
      const res = await launch(h, taskId, { command: c.command });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const session = await ended(h, res.body.sessionId);
      expect(session.state).toBe('exited');
      expect(session.execution).toMatchObject({ id: res.body.executionId, state: 'exited', exitCode: c.exitCode, signal: c.signal });
      expect(Date.parse(session.execution.endedAt)).toBeGreaterThanOrEqual(Date.parse(session.execution.startedAt));
    }
  });

  it('an agent that ends while its worker is dead is reported with its real exit code once a worker is back', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const worker = killableWorker(h, cleanups);
    const repo = makeRepo(h.scratch, 'unwatched');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'unwatched')]);
    const res = await launch(h, taskId, { command: ['sh', '-c', 'sleep 2; exit 7'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await worker.kill();
    // It ends with nobody watching: only its shim knows how.
    const pid = (await h.pool.query('SELECT pid FROM executions WHERE id = $1', [res.body.executionId])).rows[0].pid;
    await waitUntil(async () => !(await import('./support/world')).processAlive(pid), 'the agent to end');
    expect((await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body.execution.state).toBe('running');
    worker.replace();
    const session = await ended(h, res.body.sessionId);
    expect(session).toMatchObject({ state: 'exited', execution: { state: 'exited', exitCode: 7, signal: null } });
  });

  it('environment reset succeeds once the only session has exited', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'reset-after-exit');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'reset-after-exit')]);
    const res = await launch(h, taskId, { command: ['sh', '-c', 'exit 0'] });
    expect(res.status).toBe(201);
    await ended(h, res.body.sessionId);
    const reset = await h.api('POST', `/v1/tasks/${taskId}/environment/reset`, undefined, OPERATOR_TOKEN);
    expect(reset.status, JSON.stringify(reset.body)).toBe(202);
  });
});

describe('the agent environment [issue 11]', () => {
  it('holds none of the service variables: only the allow-list and its own identity, in the agent and its shim alike', async () => {
    const h = await harness({}, { inProcessWorker: false });
    let worker: ChildProcess = h.spawnWorker();
    cleanups.push(() => void worker.kill('SIGKILL'));
    const repo = makeRepo(h.scratch, 'env');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'env')]);
    const res = await launch(h, taskId, { command: ['sh', '-c', 'env; sleep 600'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const exec = (await h.pool.query('SELECT pid, log_path FROM executions WHERE id = $1', [res.body.executionId])).rows[0];
    let printed = '';
    await waitUntil(async () => (printed = readFileSync(exec.log_path, 'utf8')).includes('TWS_WORKSPACE='), 'the agent to print its environment');
    const names = (text: string, sep: string) => text.split(sep).filter(Boolean).map((line) => line.split('=')[0] ?? '');
    const secrets = [h.databaseUrl, USER_TOKEN, OPERATOR_TOKEN];
    for (const [what, text, sep] of [['agent', printed, '\n'], ['shim', readFileSync(`/proc/${exec.pid}/environ`, 'utf8'), '\0']] as const) {
      const seen = names(text, sep);
      expect(seen.filter((n) => !['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'TERM', 'TZ', 'PWD', 'SHLVL', '_', 'OLDPWD'].includes(n) && !n.startsWith('LC_')).sort(), what).toEqual(
        (what === 'shim' ? ['TWS_EXECUTION_ID', 'TWS_SESSION_ID', 'TWS_TASK_ID', 'TWS_WORKSPACE'] : ['TWS_SESSION_ID', 'TWS_TASK_ID', 'TWS_WORKSPACE']).sort(),
      );
      for (const secret of secrets) expect(text, what).not.toContain(secret);
    }
  });
});

/**
 * `Prefer: respond-async` on a launch and a resume: 202 with the session id
 * once admitted; the session then tells the outcome, a first launch that left no row included.
 * A refusal at admission is still the answer itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness';
import { createTask, expectSafeError, pidOf, registerRepo, SLEEPER, waitUntil } from './support/scenario';
import { makeRepo, processCwd, worktreePaths } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function asyncRequest(route: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${h.baseUrl}${route}`, {
    method: 'POST',
    headers: { authorization: 'Bearer test-user-token', 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function newTask() {
  const name = `async-${++n}`;
  const repo = makeRepo(h.scratch, name);
  return { repo, taskId: await createTask(h, [await registerRepo(h, repo, name)]) };
}

const launchBody = (command: string[]) => ({ executorType: 'worktree', agentProfile: 'shell', command });
const sessionOf = async (id: string) => (await h.api('GET', `/v1/sessions/${id}`)).body;

describe('Prefer: respond-async', () => {
  it('a launch answers 202 with its session once admitted; the session then says running', async () => {
    const { repo, taskId } = await newTask();
    const res = await asyncRequest(`/v1/tasks/${taskId}/sessions`, launchBody(SLEEPER));
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ sessionId: expect.any(String) });
    expect(['starting', 'running']).toContain(res.body.state);
    await waitUntil(async () => (await sessionOf(res.body.sessionId)).state === 'running', 'the session running');
    expect(processCwd(await pidOf(h, res.body.sessionId))).toBe(worktreePaths(repo)[1]);
  });

  it('a launch refused at admission answers the refusal itself', async () => {
    const { taskId } = await newTask();
    await h.pool.query('UPDATE tasks SET archived_at = now() WHERE id = $1', [taskId]);
    const res = await asyncRequest(`/v1/tasks/${taskId}/sessions`, launchBody(SLEEPER));
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expectSafeError(res.body, 'task_archived');
  });

  it('a first launch that fails after admission: 202, then the session tells the typed failure, and no row is left', async () => {
    const { repo, taskId } = await newTask();
    const res = await asyncRequest(`/v1/tasks/${taskId}/sessions`, launchBody(['/nonexistent/agent']));
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitUntil(async () => (await sessionOf(res.body.sessionId)).state === 'failed', 'the outcome');
    const view = await sessionOf(res.body.sessionId);
    expect(view).toMatchObject({
      id: res.body.sessionId,
      taskId,
      state: 'failed',
      execution: null,
      error: { code: 'invalid_request', reason: 'agent_command_not_startable' },
    });
    expect(JSON.stringify(view)).not.toContain(repo);
    expect((await h.pool.query('SELECT id FROM sessions WHERE id = $1', [res.body.sessionId])).rows).toEqual([]);
    expect(worktreePaths(repo)).toEqual([repo]);
  });

  it('a resume answers 202 once admitted; the session then runs its new agent', async () => {
    const { taskId } = await newTask();
    const first = await h.api('POST', `/v1/tasks/${taskId}/sessions`, launchBody(SLEEPER));
    expect(first.status).toBe(201);
    const res = await asyncRequest(`/v1/sessions/${first.body.sessionId}/resume`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.sessionId).toBe(first.body.sessionId);
    await waitUntil(async () => {
      const s = await sessionOf(first.body.sessionId);
      return s.state === 'running' && s.execution.id !== first.body.executionId;
    }, 'the resumed agent');
  });

  it('an unknown session is still a 404', async () => {
    const res = await h.api('GET', `/v1/sessions/${crypto.randomUUID()}`);
    expect(res.status).toBe(404);
  });
});

/**
 * One agent per session under concurrent requests: N resumes of one session at
 * the same moment (keyed, unkeyed, mixed), and a resume racing the session's own launch, end as
 * they would one after the other: every answer typed, and exactly one agent of the session alive
 * afterwards (its processes checked on the machine, not only its rows).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, USER_TOKEN, type Harness } from './support/harness';
import { createTask, launch, registerRepo, send, waitUntil } from './support/scenario';
import { makeRepo, processAlive } from './support/world';

let h: Harness;
let n = 0;
beforeAll(async () => void (h = await createHarness()));
afterAll(async () => h?.close());

async function newTask(): Promise<string> {
  const name = `resumes-${++n}`;
  return createTask(h, [await registerRepo(h, makeRepo(h.scratch, name), name)]);
}

/** The session's executions, each with whether its recorded process still runs. */
async function agentsOf(sessionId: string): Promise<{ id: string; status: string; alive: boolean }[]> {
  const rows = (
    await h.pool.query<{ id: string; status: string; pid: number }>(
      'SELECT id, status, pid FROM executions WHERE session_id = $1',
      [sessionId],
    )
  ).rows;
  return rows.map((r) => ({ id: r.id, status: r.status, alive: processAlive(r.pid) }));
}

/** Once every start has settled: exactly one execution running, its process alive, every other one's process gone. */
async function expectOneAgent(sessionId: string): Promise<void> {
  await waitUntil(
    async () => {
      const agents = await agentsOf(sessionId);
      return agents.filter((a) => a.alive).length === 1 && agents.filter((a) => a.status === 'running').length === 1;
    },
    'one agent of the session',
    30_000,
  );
  // And it stays so: nothing started late makes a second.
  await new Promise((r) => setTimeout(r, 1_500));
  const agents = await agentsOf(sessionId);
  expect(
    agents.filter((a) => a.alive),
    JSON.stringify(agents),
  ).toHaveLength(1);
  expect(agents.filter((a) => a.status === 'running').map((a) => a.id)).toEqual(
    agents.filter((a) => a.alive).map((a) => a.id),
  );
}

/** Every answer is a 200 with the session, or a typed 409. */
function expectTyped(answers: { status: number; body: any }[]): void {
  for (const a of answers) {
    if (a.status === 200) expect(a.body.id ?? a.body.sessionId).toBeTruthy();
    else {
      expect(a.status, JSON.stringify(a.body)).toBe(409);
      expect(typeof a.body.error.code).toBe('string');
    }
  }
}

describe('one agent per session under concurrent requests', () => {
  for (const [name, keys] of [
    ['two unkeyed', [null, null]],
    ['one keyed, one unkeyed', [randomUUID(), null]],
    ['two keyed (other keys)', [randomUUID(), randomUUID()]],
    ['five mixed', [randomUUID(), null, randomUUID(), null, null]],
  ] as const) {
    it(`${name} resumes of one running session at once leave exactly one agent`, async () => {
      const taskId = await newTask();
      const first = await launch(h, taskId);
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      const sessionId = first.body.sessionId as string;
      const answers = await Promise.all(
        keys.map((key) => send(h.baseUrl, 'POST', `/v1/sessions/${sessionId}/resume`, {}, { key: key ?? undefined })),
      );
      expectTyped(answers);
      await expectOneAgent(sessionId);
      // The session reads running, on the agent that runs.
      const session = (await h.api('GET', `/v1/sessions/${sessionId}`)).body;
      expect(session.state).toBe('running');
      const running = (await agentsOf(sessionId)).find((a) => a.alive)!;
      expect(session.execution.id ?? session.execution.executionId).toBe(running.id);
    });
  }

  for (const role of ['materialized', 'attached'] as const)
    it(`a resume racing the session's own launch (${role}) leaves exactly one agent`, async () => {
      const taskId = await newTask();
      if (role === 'attached') expect((await launch(h, taskId)).status).toBe(201);
      const started = await fetch(`${h.baseUrl}/v1/tasks/${taskId}/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${USER_TOKEN}`, 'content-type': 'application/json', prefer: 'respond-async' },
        body: JSON.stringify({ executorType: 'worktree', agentProfile: 'shell', command: ['sleep', '600'] }),
      });
      expect(started.status).toBe(202);
      const sessionId = ((await started.json()) as { sessionId: string }).sessionId;
      const answers = await Promise.all([
        send(h.baseUrl, 'POST', `/v1/sessions/${sessionId}/resume`, {}),
        send(h.baseUrl, 'POST', `/v1/sessions/${sessionId}/resume`, {}, { key: randomUUID() }),
      ]);
      expectTyped(answers);
      await expectOneAgent(sessionId);
    });
});

describe('a stop and a resume of one session sent together', () => {
  it('end as one after the other: running with one live agent, or stopped with none, every round', async () => {
    const taskId = await newTask();
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const sessionId = first.body.sessionId as string;
    const outcomes: string[] = [];
    for (let round = 0; round < 8; round++) {
      // Each round starts from a running agent: the stop then has one to stop while the resume
      // stops it too and starts its own, the window in which the two crossed.
      const before = await h.api('GET', `/v1/sessions/${sessionId}`);
      if (before.body.state !== 'running')
        expect((await send(h.baseUrl, 'POST', `/v1/sessions/${sessionId}/resume`, {})).status).toBe(200);
      const [stopped, resumed] = await Promise.all([
        send(h.baseUrl, 'POST', `/v1/sessions/${sessionId}/stop`),
        send(h.baseUrl, 'POST', `/v1/sessions/${sessionId}/resume`, {}),
      ]);
      expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
      expectTyped([resumed]);
      // Both answered: the stop's run and the resume's have ended, so what the rows say now is final.
      const state = (await h.api('GET', `/v1/sessions/${sessionId}`)).body.state as string;
      const agents = await agentsOf(sessionId);
      const alive = agents.filter((a) => a.alive).map((a) => a.id);
      const running = agents.filter((a) => a.status === 'running').map((a) => a.id);
      const seen = JSON.stringify({ round, state, agents });
      if (state === 'stopped') {
        expect(alive, seen).toEqual([]);
        expect(running, seen).toEqual([]);
      } else {
        expect(state, seen).toBe('running');
        expect(alive, seen).toHaveLength(1);
        expect(running, seen).toEqual(alive);
      }
      outcomes.push(state);
    }
    expect(outcomes).toHaveLength(8);
  });
});

/** Co-residency is recorded before the agent starts, as counters and a warning, never changing the outcome [R5]. */
import { readdirSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXECUTION_MARK } from '../executors/host/process-identity';
import { createHarness, type Harness } from './support/harness';
import { hostTaskQueue } from '../domain/workflow-ids';
import { createTask, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import { gitWrapper, makeRepo } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  // A slow `git worktree list` (attach validation) keeps concurrent attaches in `starting` long enough to see each other.
  h = await createHarness({ observationLockTimeoutMs: 300 });
});
afterAll(async () => h?.close());

async function metric(harness: Harness, name: string, labels: string): Promise<number> {
  const res = await fetch(`${harness.baseUrl}/metrics`);
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function task(harness: Harness): Promise<string> {
  const name = `co-${++n}`;
  return createTask(harness, [await registerRepo(harness, makeRepo(harness.scratch, name), name)]);
}

describe('co-residency observation [R5]', () => {
  it('a launch beside a running session of the task is counted with site="launch"; a lone launch is not', async () => {
    const taskId = await task(h);
    const before = await metric(h, 'session_coresidency_admitted_total', 'site="launch"');
    const first = await launch(h, taskId);
    await pidOf(h, first.body.sessionId);
    expect(await metric(h, 'session_coresidency_admitted_total', 'site="launch"')).toBe(before);
    const second = await launch(h, taskId);
    expect(second.status).toBe(201);
    await pidOf(h, second.body.sessionId);
    expect(await metric(h, 'session_coresidency_admitted_total', 'site="launch"')).toBe(before + 1);
    // The labels are a closed set: no identifier ever appears in the metrics.
    const text = await (await fetch(`${h.baseUrl}/metrics`)).text();
    expect(text).not.toContain(taskId);
    expect(text).not.toContain(first.body.sessionId);
  });

  it("is keyed by the environment: a child task's agent in its parent's worktree is observed beside the parent's; the child's task view names the borrowed environment and its owner", async () => {
    const name = `co-${++n}`;
    const repoId = await registerRepo(h, makeRepo(h.scratch, name), name);
    const parent = await createTask(h, [repoId]);
    const first = await launch(h, parent);
    await pidOf(h, first.body.sessionId);
    const child = await createTask(h, [repoId], { parentTaskId: parent, workspace: { mode: 'inherit_parent' } });
    const res = await launch(h, child);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await pidOf(h, res.body.sessionId);
    const observed = (
      await h.pool.query('SELECT outcome, sibling_session_ids FROM coresidency_observations WHERE session_id = $1', [
        res.body.sessionId,
      ])
    ).rows;
    expect(observed).toEqual([{ outcome: 'coresident', sibling_session_ids: [first.body.sessionId] }]);
    const view = await h.api('GET', `/v1/tasks/${child}`);
    expect(view.body.environment).toMatchObject({
      id: first.body.taskEnvironmentId,
      ownerTaskId: parent,
      borrowed: true,
      status: 'ready',
    });
    expect((await h.api('GET', `/v1/tasks/${parent}`)).body.environment).toMatchObject({
      id: first.body.taskEnvironmentId,
      ownerTaskId: parent,
      borrowed: false,
    });
  });

  it('a sibling read that fails records a skipped observation, and the launch still succeeds', async () => {
    const taskId = await task(h);
    const first = await launch(h, taskId);
    await pidOf(h, first.body.sessionId);
    const before = await metric(h, 'session_coresidency_observation_skipped_total', 'reason="sibling_read_timeout"');
    const admittedBefore = await metric(h, 'session_coresidency_admitted_total', 'site="launch"');
    // Another transaction holds the sibling's row mid-transition: the observation cannot read it in time.
    const blocker = await h.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT id FROM sessions WHERE id = $1 FOR UPDATE', [first.body.sessionId]);
      const second = await launch(h, taskId);
      expect(second.status, JSON.stringify(second.body)).toBe(201);
      expect(second.body.state).toBe('running');
      await pidOf(h, second.body.sessionId);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    expect(await metric(h, 'session_coresidency_observation_skipped_total', 'reason="sibling_read_timeout"')).toBe(
      before + 1,
    );
    expect(await metric(h, 'session_coresidency_admitted_total', 'site="launch"')).toBe(admittedBefore);
  });

  it('two concurrent launches both see each other', async () => {
    const slow = await createHarness();
    try {
      const taskId = await task(slow);
      // The first session materializes and its agent exits at once: the workspace is ready, no session works in it.
      const first = await launch(slow, taskId, { command: ['true'] });
      expect(first.status).toBe(201);
      await slow.pool.query("UPDATE sessions SET state = 'exited' WHERE id = $1", [first.body.sessionId]);
      // Both launches are admitted together once the worker is back, and each waits in `starting`
      // for its (slow) validation: each observes the other.
      await slow.stopWorker();
      const pending = [launch(slow, taskId), launch(slow, taskId)];
      // Both started on the engine (their workflows wait for a worker), then the worker comes back.
      await waitUntil(async () => {
        let running = 0;
        for await (const wf of slow.temporal.workflow.list({
          query: `WorkflowType = "launchSession" AND ExecutionStatus = "Running" AND TaskQueue = "${hostTaskQueue(slow.config.taskQueue, slow.config.hostId)}"`,
        }))
          if (wf.workflowId) running++;
        return running === 2;
      }, 'both launches started on the engine');
      await slow.startWorker({ gitBinary: gitWrapper(slow.scratch, { sleepOnWorktreeList: 1 }) });
      const results = await Promise.all(pending);
      const ids = [];
      for (const r of results) {
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        await pidOf(slow, r.body.sessionId);
        ids.push(r.body.sessionId);
      }
      const seen = (
        await slow.pool.query(
          'SELECT session_id, outcome, sibling_session_ids FROM coresidency_observations ORDER BY session_id',
        )
      ).rows;
      expect(seen).toEqual(
        [
          { session_id: ids[0], outcome: 'coresident', sibling_session_ids: [ids[1]] },
          { session_id: ids[1], outcome: 'coresident', sibling_session_ids: [ids[0]] },
        ].sort((a, b) => a.session_id.localeCompare(b.session_id)),
      );
      expect(await metric(slow, 'session_coresidency_admitted_total', 'site="launch"')).toBe(2);
    } finally {
      await slow.close();
    }
  });
});

describe('the co-residency warning [R5.1, R5.2]', () => {
  /** Whether a process marked with this execution id is alive now (read from /proc at once). */
  function agentAlive(executionId: string): boolean {
    const mark = Buffer.from(`${EXECUTION_MARK}=${executionId}\0`);
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const environ = readFileSync(`/proc/${name}/environ`);
        const at = environ.indexOf(mark);
        if (at === 0 || (at > 0 && environ[at - 1] === 0)) return true;
      } catch {
        // gone meanwhile, or not readable: not the agent
      }
    }
    return false;
  }

  it('is logged once, structured, before the agent process starts, and names no path', async () => {
    // Each warning is read the moment it is written, and /proc asked then whether its agent runs.
    const warnings: { line: any; agentAlready: boolean }[] = [];
    const logTo = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const text of chunk.toString('utf8').split('\n').filter(Boolean)) {
          const line = JSON.parse(text);
          if (line.event === 'session_coresidency') warnings.push({ line, agentAlready: agentAlive(line.executionId) });
        }
        done();
      },
    });
    const logged = await createHarness({}, { logTo });
    try {
      const taskId = await task(logged);
      const first = await launch(logged, taskId);
      await pidOf(logged, first.body.sessionId);
      expect(warnings).toEqual([]);
      const second = await launch(logged, taskId);
      expect(second.status, JSON.stringify(second.body)).toBe(201);
      await pidOf(logged, second.body.sessionId);
      expect(warnings).toHaveLength(1);
      const [{ line, agentAlready }] = warnings as [(typeof warnings)[number]];
      expect(line).toMatchObject({
        level: 40,
        site: 'launch',
        sessionId: second.body.sessionId,
        executionId: second.body.executionId,
        taskId,
        siblingSessionIds: [first.body.sessionId],
      });
      expect(agentAlready, 'the agent process ran before its co-residency was said').toBe(false);
      expect(JSON.stringify(line)).not.toContain(logged.config.workspaceRoot);
    } finally {
      await logged.close();
    }
  });
});

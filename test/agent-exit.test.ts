/**
 * Agents you can see: every exit is recorded with its status — noticed by the process
 * that started the agent, or collected from the supervising shim's status file by a worker that
 * comes back — and the agent's environment holds nothing of the service's.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { harnessesPerTest, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { killableWorker } from './support/processes';
import { endExecution } from '../db/executions';
import { spawnDetached } from '../executors/host/agent-spawn';
import { agentEnded, createTask, launch, registerRepo, taskWithSession, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';

const { harness, cleanups } = harnessesPerTest();

const ended = agentEnded;

describe('agent exits', () => {
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
      expect(session.execution).toMatchObject({
        id: res.body.executionId,
        state: 'exited',
        exitCode: c.exitCode,
        signal: c.signal,
      });
      expect(Date.parse(session.execution.endedAt)).toBeGreaterThanOrEqual(Date.parse(session.execution.startedAt));
    }
  });

  it('agents that end at once, many at a time, each have their own exit code recorded (also one whose supervisor ended before it was identified)', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'at-once');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'at-once')]);
    // Side by side, the worker is busy: a supervisor can end (and be reaped) before its start
    // time is read. Its outcome is in its status file all the same.
    // The first prepares the workspace; the others attach to it at once.
    const codes = Array.from({ length: 12 }, (_, i) => i + 1);
    const exit = (code: number) => launch(h, taskId, { command: ['sh', '-c', `exit ${code}`] });
    const launched = [await exit(codes[0]!), ...(await Promise.all(codes.slice(1).map(exit)))];
    for (const [i, res] of launched.entries()) {
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const session = await ended(h, res.body.sessionId);
      expect({
        session: session.state,
        execution: session.execution.state,
        exitCode: session.execution.exitCode,
      }).toEqual({ session: 'exited', execution: 'exited', exitCode: codes[i] });
    }
  });

  it('an agent that ends at once is reported even when its start and its end are read together (the event loop busy meanwhile)', async () => {
    const h = await harness();
    const config = { ...h.config, agentSandbox: 'none' as const, limits: { ...h.config.limits, enabled: false } };
    const cwd = mkdtempSync(path.join(h.scratch, 'at-once-'));
    const missed: number[] = [];
    for (let i = 0; i < 4; i++) {
      let reported = false;
      const input = {
        executionId: randomUUID(),
        sessionId: randomUUID(),
        taskId: randomUUID(),
        environmentId: randomUUID(),
        environmentTaskId: randomUUID(),
        cwd,
        command: ['true'],
        env: {},
        prompt: null,
        gitSlots: [],
        sshTargetId: null,
      };
      // Busy 50 ms at every turn while it starts: the starter's lines for its start and its end
      // (the supervisor and `true` end within that) wait in the pipe and are read in one chunk.
      const busy = setInterval(() => {
        for (const until = Date.now() + 50; Date.now() < until;);
      }, 0);
      try {
        await spawnDetached(input, path.join(cwd, `${i}.log`), config, () => (reported = true));
      } finally {
        clearInterval(busy);
      }
      await waitUntil(async () => reported, `the end of start ${i} reported`, 5_000).catch(() => missed.push(i));
    }
    expect(missed).toEqual([]);
  });

  it('a session and its execution are read in one snapshot: an end committed between the two reads is seen whole or not at all', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'snapshot');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'snapshot')]);
    // Long enough to outlive the read below; it ends by itself, its end then found recorded already.
    const res = await launch(h, taskId, { command: ['sleep', '5'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const { sessionId, executionId } = res.body;
    // A writer holds the executions table: each reader has read its session row and now waits to
    // read the execution. The writer then ends the agent as an exit's collection does (execution
    // and session in one commit), between a reader's two reads.
    const writer = await h.pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('LOCK TABLE executions IN ACCESS EXCLUSIVE MODE');
      const still = await writer.query('SELECT status FROM executions WHERE id = $1', [executionId]);
      expect(still.rows[0].status, 'the agent must still run when the readers start').toBe('running');
      const one = h.api('GET', `/v1/sessions/${sessionId}`);
      const page = h.api('GET', `/v1/tasks/${taskId}/sessions`);
      await waitUntil(async () => {
        const waiting = await h.pool.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'executions'::regclass`,
        );
        return waiting.rows[0].n >= 2;
      }, 'both readers to wait for the executions table');
      await writer.query(`UPDATE executions SET status = 'exited', exit_code = 0, ended_at = now() WHERE id = $1`, [
        executionId,
      ]);
      await writer.query(`UPDATE sessions SET state = 'exited', updated_at = now() WHERE id = $1`, [sessionId]);
      await writer.query('COMMIT');
      const [seen, listed] = await Promise.all([one, page]);
      expect(seen.status).toBe(200);
      expect(listed.status).toBe(200);
      const inPage = listed.body.items.find((s: { id: string }) => s.id === sessionId);
      for (const view of [seen.body, inPage]) {
        // The moment before the end, whole: both still running.
        expect({ session: view.state, execution: view.execution.state }).toEqual({
          session: 'running',
          execution: 'running',
        });
      }
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      writer.release();
    }
    const after = (await h.api('GET', `/v1/sessions/${sessionId}`)).body;
    expect({ session: after.state, execution: after.execution.state }).toEqual({
      session: 'exited',
      execution: 'exited',
    });
  });

  it('an end dated before the start was recorded (an agent that ends at once, a target whose clock is behind) is recorded at the start, never before it', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'early-end');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'early-end')]);
    // Long enough to end after its end is recorded here; short enough never to outlive the test.
    const res = await launch(h, taskId, { command: ['sleep', '3'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const { rows } = await h.pool.query('SELECT started_at FROM executions WHERE id = $1', [res.body.executionId]);
    const startedAt: Date = rows[0].started_at;
    const said = new Date(startedAt.getTime() - 5).toISOString(); // what the supervisor's clock said
    expect(
      await endExecution(h.pool, res.body.executionId, { status: 'exited', exitCode: 0, signal: null, endedAt: said }),
    ).not.toBeNull();
    const after = await h.pool.query('SELECT ended_at FROM executions WHERE id = $1', [res.body.executionId]);
    expect(after.rows[0].ended_at.getTime()).toBe(startedAt.getTime());
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
    const { taskId, session } = await taskWithSession(h, 'reset-after-exit', { command: ['sh', '-c', 'exit 0'] });
    await ended(h, session.sessionId);
    const reset = await h.api('POST', `/v1/tasks/${taskId}/environment/reset`, undefined, OPERATOR_TOKEN);
    expect(reset.status, JSON.stringify(reset.body)).toBe(202);
  });
});

describe('the agent environment', () => {
  it('holds none of the service variables: the agent only the allow-list and its own identity, its shim a fixed environment', async () => {
    const h = await harness({}, { inProcessWorker: false });
    killableWorker(h, cleanups); // the worker process, with the service's environment, starts the agent
    const repo = makeRepo(h.scratch, 'env');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'env')]);
    const res = await launch(h, taskId, { command: ['sh', '-c', 'env; sleep 600'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const exec = (await h.pool.query('SELECT pid, log_path FROM executions WHERE id = $1', [res.body.executionId]))
      .rows[0];
    let printed = '';
    await waitUntil(
      async () => (printed = readFileSync(exec.log_path, 'utf8')).includes('TWS_WORKSPACE='),
      'the agent to print its environment',
    );
    const names = (text: string, sep: string) =>
      text
        .split(sep)
        .filter(Boolean)
        .map((line) => line.split('=')[0] ?? '');
    const secrets = [h.databaseUrl, USER_TOKEN, OPERATOR_TOKEN];
    for (const [what, text, sep] of [
      ['agent', printed, '\n'],
      ['shim', readFileSync(`/proc/${exec.pid}/environ`, 'utf8'), '\0'],
    ] as const) {
      const seen = names(text, sep);
      expect(
        seen
          .filter(
            (n) =>
              ![
                'PATH',
                'HOME',
                'USER',
                'LOGNAME',
                'SHELL',
                'LANG',
                'TERM',
                'TZ',
                'PWD',
                'SHLVL',
                '_',
                'OLDPWD',
              ].includes(n) && !n.startsWith('LC_'),
          )
          .sort(),
        what,
      ).toEqual(
        // The shim (outside the sandbox) has a fixed environment: its mark, the file bubblewrap
        // reads the agent's variables from and the control groups it puts the agent in, none of
        // the agent's own.
        (what === 'shim'
          ? ['TWS_CGROUP_PROCS', 'TWS_EXECUTION_ID', 'TWS_SANDBOX_ARGS']
          : ['TWS_SESSION_ID', 'TWS_TASK_ID', 'TWS_WORKSPACE']
        ).sort(),
      );
      for (const secret of secrets) expect(text, what).not.toContain(secret);
    }
  });
});

describe('agent logs through the API', () => {
  async function text(h: Harness, route: string): Promise<{ status: number; type: string | null; body: string }> {
    const res = await fetch(h.baseUrl + route, { headers: { authorization: `Bearer ${USER_TOKEN}` } });
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
  }

  it('tail returns the last lines of what the agent printed; follow streams until the agent ends; nothing names a path', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'logs');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'logs')]);
    const res = await launch(h, taskId, {
      command: [
        'sh',
        '-c',
        'for i in 1 2 3 4 5; do echo line $i; done; sleep 1; echo late; sleep 1; echo last; exit 0',
      ],
    });
    expect(res.status).toBe(201);
    const route = `/v1/sessions/${res.body.sessionId}/logs`;
    // Follow from the start: it ends by itself once the agent has ended, with everything it printed.
    const followed = await text(h, `${route}?follow=1`);
    expect(followed.status).toBe(200);
    expect(followed.type).toMatch(/^text\/plain/);
    expect(followed.body).toBe('line 1\nline 2\nline 3\nline 4\nline 5\nlate\nlast\n');
    expect((await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body.execution.state).toBe('exited');
    expect((await text(h, `${route}?tail=2`)).body).toBe('late\nlast\n');
    expect((await text(h, `${route}?tail=0`)).body).toBe('');
    expect((await text(h, `${route}?executionId=${res.body.executionId}`)).body).toBe(followed.body);
    expect(followed.body).not.toContain(h.scratch);
    // Bad input is a 400 that names nothing; another session's execution is not this one's.
    expect((await text(h, `${route}?tail=-1`)).status).toBe(400);
    expect((await text(h, `${route}?executionId=${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`)).status).toBe(404);
  });

  it('is kept on disk within TWS_AGENT_LOG_MAX_BYTES, the newest output kept; a session delete keeps it, a task delete removes it', async () => {
    const h = await harness({ agentLogMaxBytes: 64 * 1024 });
    const repo = makeRepo(h.scratch, 'bounded');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'bounded')]);
    // About 600 KB of numbered lines.
    const res = await launch(h, taskId, {
      command: ['sh', '-c', 'i=0; while [ $i -lt 60000 ]; do echo "line $i"; i=$((i+1)); done; exit 0'],
    });
    expect(res.status).toBe(201);
    await ended(h, res.body.sessionId);
    const exec = (await h.pool.query('SELECT log_path FROM executions WHERE id = $1', [res.body.executionId])).rows[0];
    const { statSync, existsSync } = await import('node:fs');
    const onDisk =
      statSync(exec.log_path).size + (existsSync(`${exec.log_path}.1`) ? statSync(`${exec.log_path}.1`).size : 0);
    expect(onDisk).toBeLessThanOrEqual(64 * 1024);
    expect((await text(h, `/v1/sessions/${res.body.sessionId}/logs?tail=1`)).body).toBe('line 59999\n');

    expect((await h.api('DELETE', `/v1/sessions/${res.body.sessionId}`)).status).toBe(204);
    expect(existsSync(exec.log_path)).toBe(true);
    const other = await launch(h, taskId, { command: ['sh', '-c', 'echo hello; exit 0'] });
    expect(other.status).toBe(201);
    const otherLog = (await h.pool.query('SELECT log_path FROM executions WHERE id = $1', [other.body.executionId]))
      .rows[0].log_path;
    await ended(h, other.body.sessionId);
    const deleted = await h.api('DELETE', `/v1/tasks/${taskId}`, undefined, OPERATOR_TOKEN);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    const { waitForJob } = await import('./support/cleanup');
    await waitForJob(h, deleted.body.operationId);
    expect(existsSync(otherLog)).toBe(false);
    expect(existsSync(exec.log_path)).toBe(false);
  });
});

describe('per-session arguments', () => {
  it('args are appended, env is given, the prompt is a file named by TWS_PROMPT_FILE; a resume keeps the env', async () => {
    const h = await harness({
      agentProfiles: {
        printer: {
          command: [
            'sh',
            '-c',
            'echo "$0 $* $GREETING $PROFILE_VAR"; cat "$TWS_PROMPT_FILE" 2>/dev/null; echo; sleep 600',
          ],
          env: { PROFILE_VAR: 'from-profile' },
        },
      },
    });
    const repo = makeRepo(h.scratch, 'args');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'args')]);
    const res = await launch(h, taskId, {
      agentProfile: 'printer',
      command: undefined,
      args: ['first', 'second'],
      env: { GREETING: 'hello' },
      prompt: 'fix the bug',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const exec = (await h.pool.query('SELECT log_path FROM executions WHERE id = $1', [res.body.executionId])).rows[0];
    // Until the echo after the prompt: the line's end is written a moment after its text.
    await waitUntil(async () => readFileSync(exec.log_path, 'utf8').includes('fix the bug\n'), 'the agent output');
    expect(readFileSync(exec.log_path, 'utf8')).toBe('first second hello from-profile\nfix the bug\n');
    const resumed = await h.api('POST', `/v1/sessions/${res.body.sessionId}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const again = (await h.pool.query('SELECT log_path FROM executions WHERE id = $1', [resumed.body.execution.id]))
      .rows[0];
    await waitUntil(async () => readFileSync(again.log_path, 'utf8').includes('hello'), 'the resumed agent output');
    expect(readFileSync(again.log_path, 'utf8').split('\n')[0]).toBe('first second hello from-profile');
    // A resume may add to its own run: args after the command, env over the session's, a prompt.
    expect((await h.api('POST', `/v1/sessions/${res.body.sessionId}/resume`, { env: { TWS_X: '1' } })).status).toBe(
      400,
    );
    const more = await h.api('POST', `/v1/sessions/${res.body.sessionId}/resume`, {
      args: ['third'],
      env: { GREETING: 'again' },
      prompt: 'next step',
    });
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    const third = (await h.pool.query('SELECT log_path FROM executions WHERE id = $1', [more.body.execution.id]))
      .rows[0];
    await waitUntil(
      async () => readFileSync(third.log_path, 'utf8').includes('next step\n'),
      'the second resume output',
    );
    expect(readFileSync(third.log_path, 'utf8')).toBe('first second third again from-profile\nnext step\n');
  });

  it('bad args or env are a 400 with nothing created; TWS_SHELL_PROFILE=0 turns the shell profile off', async () => {
    const h = await harness({ shellProfile: false });
    const repo = makeRepo(h.scratch, 'bad-args');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'bad-args')]);
    for (const body of [
      { env: { TWS_OPERATOR_TOKEN: 'x' } },
      { env: { 'lower-case': 'x' } },
      { args: [1] },
      { env: { A: 1 } },
      {},
    ]) {
      const res = await launch(h, taskId, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n).toBe(0);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM task_environments')).rows[0].n).toBe(0);
  });
});

/**
 * The fault matrix: each of worker, gateway, Temporal and PostgreSQL is killed with
 * SIGKILL in the middle of a first launch, an attach, a resume, an archive and a delete, and brought back.
 * The client retries as a client would (the same Idempotency-Key). Then an audit of the world:
 * every job final or waiting for an operator, at most one live agent per session and a session
 * for every live agent, a worktree for every active inventory row and a row for every worktree,
 * no agent in a removed folder, no dirty file lost. One test file a part (test/fault-matrix-*.test.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresService } from '../../client/launcher/postgres-service';
import { createHarness, freePort, OPERATOR_TOKEN, type Harness } from './harness';
import { killLiveAgents, liveAgents, startedAgents, runTemporalDevServer, startPostgresAt } from './processes';
import { createTask, registerRepo, send, SLEEPER, waitUntil } from './scenario';
import { clearSlowGitStep, git, gitWrapper, makeRepo, setGitSlow, slowGitStepBegun, worktreePaths } from './world';

export type Part = 'worker' | 'gateway' | 'temporal' | 'postgres';
type Operation = 'first launch' | 'attach' | 'resume' | 'archive' | 'delete';

let scratch: string;
let pgPort: number;
let postgres: PostgresService | null = null;
let temporalPort: number;
let temporal: ChildProcess | null = null;
const ends: (() => Promise<void> | void)[] = [];

const startPostgres = () => startPostgresAt(path.join(scratch, 'pg'), pgPort);

async function startTemporal(): Promise<void> {
  temporal = await runTemporalDevServer(temporalPort, path.join(scratch, 'temporal.sqlite'));
}

/** Each case's system ends with it: twenty idle workers, gateways and agents left to the end slowed the last cases past their waits. */
async function endSystems(): Promise<void> {
  for (const end of ends.splice(0).reverse()) await Promise.resolve(end()).catch(() => {});
}

/**
 * One system of its own: a database, a queue, a worker and a gateway process; git takes a second
 * over each worktree step of the operation under test (its set-up and its recovery at git's pace).
 */
async function system() {
  const h = await createHarness(
    {},
    { temporalAddress: `127.0.0.1:${temporalPort}`, postgresServerUrl: postgres!.serverUrl, inProcessWorker: false },
  );
  const slowGit = gitWrapper(h.scratch, { sleepOnWorktreeAdd: 1, sleepOnWorktreeList: 1, sleepOnWorktreeRemove: 1 });
  setGitSlow(slowGit, false);
  const env = { TWS_GIT_BINARY: slowGit };
  let worker = h.spawnWorker(env);
  let gateway = await h.spawnGateway(env);
  ends.push(async () => {
    worker.kill('SIGKILL');
    gateway.child.kill('SIGKILL');
    for (const { id } of (await h.pool.query<{ id: string }>('SELECT id FROM tasks')).rows)
      killLiveAgents({ taskId: id });
    await h.close();
  });
  const killed = (child: ChildProcess) =>
    new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));
  return {
    h,
    slowGit,
    gatewayUrl: () => gateway.url,
    async kill(part: Part): Promise<() => Promise<void>> {
      if (part === 'worker') {
        worker.kill('SIGKILL');
        await killed(worker);
        return async () => void (worker = h.spawnWorker(env));
      }
      if (part === 'gateway') {
        gateway.child.kill('SIGKILL');
        await killed(gateway.child);
        return async () => void (gateway = await h.spawnGateway(env));
      }
      if (part === 'temporal') {
        temporal!.kill('SIGKILL');
        await killed(temporal!);
        return startTemporal;
      }
      process.kill(Number(readFileSync(path.join(scratch, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGKILL');
      await waitUntil(
        async () =>
          !existsSync(path.join(scratch, 'pg', 'postmaster.pid')) ||
          !(await h.pool.query('SELECT 1').then(
            () => true,
            () => false,
          )),
        'PostgreSQL gone',
      );
      return async () => void (postgres = await startPostgres());
    },
  };
}

/** A client that retries while the service is away (connection refused or cut, a typed 503), as the 503's body says to. */
async function untilAnswered(
  request: () => Promise<{ status: number; body: any }>,
): Promise<{ status: number; body: any }> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await request().catch((err: Error) => err);
    if (!(res instanceof Error) && res.status !== 503) return res;
    if (Date.now() > deadline)
      throw new Error(`still unavailable: ${res instanceof Error ? res.message : JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The audit of the world after recovery: every job settled, one agent per session, worktrees and rows matching, no dirty file lost. */
async function audit(h: Harness, t: { taskId: string; repo: string; dirty: string | null; deleted: boolean }) {
  // Every job reaches a final or operator-visible state.
  await waitUntil(
    async () =>
      (await h.pool.query("SELECT 1 FROM cleanup_jobs WHERE state NOT IN ('succeeded', 'cancelled', 'needs_operator')"))
        .rowCount === 0,
    'every job final or waiting for an operator',
    90_000,
  );
  // Sessions still starting have a launch that is settling: wait for each to settle.
  await waitUntil(
    async () =>
      (await h.pool.query("SELECT 1 FROM sessions WHERE task_id = $1 AND state = 'starting'", [t.taskId])).rowCount ===
      0,
    'no session left starting',
    90_000,
  );

  const agents = liveAgents({ taskId: t.taskId });
  const sessions = (
    await h.pool.query<{ id: string }>('SELECT id FROM sessions WHERE task_id = $1', [t.taskId])
  ).rows.map((r) => r.id);
  const running = (
    await h.pool.query<{ session_id: string; pid: number }>(
      "SELECT session_id, pid FROM executions WHERE status = 'running'",
    )
  ).rows;
  for (const s of sessions)
    expect(agents.filter((a) => a.sessionId === s).length, `agents of session ${s}`).toBeLessThanOrEqual(1);
  for (const a of agents) {
    // Every live agent has its session and its record, and works in a folder that exists.
    expect(sessions, 'a live agent without a session').toContain(a.sessionId);
    expect(running, 'a live agent without a running execution').toContainEqual({ session_id: a.sessionId, pid: a.pid });
    expect(a.cwd.endsWith(' (deleted)') || !existsSync(a.cwd), `agent ${a.pid} in a removed folder`).toBe(false);
  }

  // Every worktree has an inventory row; every active inventory row a worktree.
  const registered = worktreePaths(t.repo).filter((p) => p !== t.repo);
  const rows = (
    await h.pool.query<{ worktree_path: string | null; status: string }>(
      'SELECT worktree_path, status FROM environment_repos',
    )
  ).rows;
  for (const p of registered)
    expect(
      rows.filter((r) => r.worktree_path === p && (r.status === 'active' || r.status === 'retained')),
      `inventory of ${p}`,
    ).toHaveLength(1);
  for (const r of rows.filter((x) => x.status === 'active' && x.worktree_path))
    expect(registered, 'an active row without its worktree').toContain(r.worktree_path);

  // No dirty file lost: still in its worktree (archive keeps dirty work), or saved on the task's
  // hidden ref before a consented delete removed the worktree.
  if (t.dirty && !t.deleted) expect(readFileSync(t.dirty, 'utf8')).toBe('unsaved work\n');
  if (t.dirty && t.deleted) {
    const [saved] = git(t.repo, 'for-each-ref', '--format=%(refname)', `refs/task-workspaces/saved/${t.taskId}/`)
      .split('\n')
      .filter(Boolean);
    expect(saved, 'the saved work of the deleted task').toBeDefined();
    expect(git(t.repo, 'show', `${saved}:unsaved.txt`)).toBe('unsaved work');
  }
}

const DOWN_MS: Record<Part, number> = { worker: 1500, gateway: 1500, temporal: 3000, postgres: 10_000 };
const OPERATIONS: Operation[] = ['first launch', 'attach', 'resume', 'archive', 'delete'];
/**
 * The matrix's row for one part, in a file of its own (one file a part, so that the four run on
 * both of the suite's workers): its own PostgreSQL and Temporal dev server, which it kills.
 */
export function faultMatrixRow(part: Part): void {
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'tws-faults-'));
    await chmod(scratch, 0o755); // embedded PostgreSQL runs as the postgres user when tests run as root
    [pgPort, temporalPort] = [await freePort(), await freePort()];
    [postgres] = await Promise.all([startPostgres(), startTemporal()]);
  }, 180_000);

  afterEach(endSystems, 60_000);

  afterAll(async () => {
    await endSystems();
    temporal?.kill('SIGKILL');
    await postgres?.stop().catch(() => {});
    await rm(scratch, { recursive: true, force: true });
  }, 180_000);

  describe(`${part} killed with SIGKILL`, () => {
    it.each(OPERATIONS)(
      'in the middle of %s: recovered, the audit holds',
      async (operation) => {
        const sys = await system();
        const { h } = sys;
        const repo = makeRepo(h.scratch, 'faulted');
        const taskId = await createTask(h, [await registerRepo(h, repo, 'faulted')]);
        const launchBody = { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER };
        let dirty: string | null = null;
        let first: { sessionId: string } | null = null;
        if (operation !== 'first launch') {
          const res = await send(h.baseUrl, 'POST', `/v1/tasks/${taskId}/sessions`, launchBody);
          expect(res.status, JSON.stringify(res.body)).toBe(201);
          first = res.body;
          const worktree = registeredWorktree(repo);
          dirty = path.join(worktree, 'unsaved.txt');
          writeFileSync(dirty, 'unsaved work\n');
        }

        // The operation through the gateway process, and the moment it is under way.
        const key = randomUUID();
        const act = (url: string) => {
          if (operation === 'resume') return send(url, 'POST', `/v1/sessions/${first!.sessionId}/resume`, {}, { key });
          if (operation === 'archive') return send(url, 'POST', `/v1/tasks/${taskId}/archive`, {});
          if (operation === 'delete')
            return send(url, 'DELETE', `/v1/tasks/${taskId}?discardChanges=true`, undefined, { token: OPERATOR_TOKEN });
          return send(url, 'POST', `/v1/tasks/${taskId}/sessions`, launchBody, { key });
        };
        const underWay = async () => {
          if (operation === 'resume')
            return (
              (
                await h.pool.query('SELECT 1 FROM sessions WHERE id = $1 AND admitted_run IS NOT NULL', [
                  first!.sessionId,
                ])
              ).rowCount === 1
            );
          if (operation === 'archive' || operation === 'delete')
            return (await h.pool.query('SELECT 1 FROM cleanup_jobs WHERE task_id = $1', [taskId])).rowCount === 1;
          return (
            (await h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [taskId])).rows[0].n ===
            (operation === 'attach' ? 2 : 1)
          );
        };
        clearSlowGitStep(sys.slowGit, 'any');
        setGitSlow(sys.slowGit, true);
        const pending = act(sys.gatewayUrl()).catch((err: Error) => err);
        const early: { answer?: Awaited<typeof pending> } = {};
        void pending.then((answer) => (early.answer = answer));
        await waitUntil(async () => (await underWay()) || early.answer !== undefined, `${operation} under way`);
        if (!(await underWay()))
          throw new Error(
            `${operation} answered before it was under way: ${early.answer instanceof Error ? early.answer.message : JSON.stringify(early.answer)}`,
          );
        // Killed inside one of its (slow, 1 s) git steps.
        await slowGitStepBegun(sys.slowGit, 'any');
        const restore = await sys.kill(part);
        setGitSlow(sys.slowGit, false); // what recovers runs at git's own pace
        // Down for a while (a request in flight then waits, fails or gets its typed 503), then back:
        // the database longer than a step's retries for anything but an outage (about 7 s).
        await new Promise((r) => setTimeout(r, DOWN_MS[part]));
        await restore();
        const during = await pending;
        // Never a plain 500: an answer, a typed 503, or a cut connection.
        if (!(during instanceof Error)) expect(during.status, JSON.stringify(during.body)).not.toBe(500);

        // The client retries as told (the same key); a cleanup is followed through its job.
        const cleanup = operation === 'archive' || operation === 'delete';
        const settled =
          cleanup && !(during instanceof Error) && during.status === 202
            ? during
            : await untilAnswered(() => act(h.baseUrl));
        if (operation === 'archive') {
          // Its first answer was lost and the job is there: the retry is refused as archived or in cleanup.
          if (settled.status === 409)
            expect(['task_archived', 'task_cleanup_in_progress']).toContain(settled.body.error.code);
          else expect(settled.status, JSON.stringify(settled.body)).toBe(202);
        } else if (operation === 'delete') {
          // Its first answer was lost: the task is gone already (404), or its cleanup is under way (409).
          if (settled.status === 404) expect(settled.body.error.code).toBe('not_found');
          else if (settled.status === 409) expect(settled.body.error.code).toBe('task_cleanup_in_progress');
          else expect(settled.status, JSON.stringify(settled.body)).toBe(202);
        } else {
          expect(settled.status, JSON.stringify(settled.body)).toBe(operation === 'resume' ? 200 : 201);
        }
        await audit(h, { taskId, repo, dirty, deleted: operation === 'delete' });
        if (cleanup) {
          const job = (await h.pool.query('SELECT state FROM cleanup_jobs WHERE task_id = $1', [taskId])).rows;
          expect(job).toEqual([{ state: 'succeeded' }]);
          expect(liveAgents({ taskId })).toEqual([]);
        } else {
          await startedAgents({ taskId }, operation === 'attach' ? 2 : 1);
        }
      },
      240_000,
    );
  });
}

function registeredWorktree(repo: string): string {
  const [worktree] = worktreePaths(repo).filter((p) => p !== repo);
  expect(worktree).toBeDefined();
  expect(git(worktree!, 'status', '--porcelain')).toBe('');
  return worktree!;
}

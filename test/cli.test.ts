/**
 * The operator CLI (`npx tws`) against a running system, as a script would use
 * it: the package's bin as a process, `--json` output parsed, exit codes checked. The bin runs the
 * CLI as built by set-up (.build/, plain JavaScript), so it is built first, as `make setup` does.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentsLeftLine } from '../client/launcher/agents-left';
import { COMMANDS } from '../client/cli/cli-usage';
import { buildServices } from '../client/launcher/service-build';
import { taskDirName } from '../domain/task-layout';
import { archive, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, launch, registerRepo } from './support/scenario';
import { makeRepo } from './support/world';

let h: Harness;

const BIN = path.resolve('bin/tws.mjs');

beforeAll(async () => {
  buildServices(path.resolve('.'));
  h = await createHarness({ temporalUiUrl: 'http://127.0.0.1:8233' });
});
afterAll(async () => h?.close());

/** The bin as `node` runs it; an `undefined` in `env` removes that variable. */
async function tws(
  args: string[],
  env: Record<string, string | undefined> = {},
  bin = BIN,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const merged: NodeJS.ProcessEnv = {
    ...process.env,
    TWS_API_URL: h.baseUrl,
    TWS_OPERATOR_TOKEN: OPERATOR_TOKEN,
    ...env,
  };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args], {
      cwd: h.scratch, // any folder outside the checkout: the bin finds its own install
      env: merged,
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

  it('retry and cancel of a finished job are refused with exit 1 and the reason, a 400 with its own message; bad ids and commands exit 2 without a call', async () => {
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
    // A value the service refuses: the CLI shows the 400's own message, word for word, exit 1.
    const api = await h.api('GET', '/v1/cleanup-jobs?state=bogus', undefined, OPERATOR_TOKEN);
    expect(api.status).toBe(400);
    const refused = await tws(['jobs', '--state', 'bogus']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${api.body.error.code}: ${api.body.error.message}`);
    expect(api.body.error.message).toMatch(/state/);
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

describe('tws stop and what Ctrl-C leaves running', () => {
  it('stop --all stops every running agent of the instance, across tasks, and keeps their files; the launcher counts them first', async () => {
    const a = await stoppedTask('cli-stop-a');
    const b = await stoppedTask('cli-stop-b');
    const mine = [a.sessionId, b.sessionId].sort();

    // GET /v1/sessions?state=running: every task's, paged.
    const first = await h.api('GET', '/v1/sessions?state=running&limit=1');
    expect(first.status).toBe(200);
    expect(first.body.items).toHaveLength(1);
    const second = await h.api('GET', `/v1/sessions?state=running&limit=200&cursor=${first.body.nextCursor}`);
    const running = [...first.body.items, ...second.body.items].map((s: { id: string }) => s.id);
    expect(running).toEqual(expect.arrayContaining(mine));
    expect((await h.api('GET', '/v1/sessions?state=sleeping')).status).toBe(400);

    // What the launcher says on Ctrl-C: this host's agents, by count and id.
    const line = await agentsLeftLine(h.baseUrl, OPERATOR_TOKEN, h.config.hostId);
    expect(line).toMatch(new RegExp(`^${running.length} agents keep running on this host`));
    for (const id of mine) expect(line).toContain(id);
    expect(line).toContain('npx tws stop --all');
    expect(await agentsLeftLine(h.baseUrl, OPERATOR_TOKEN, 'another-host')).toBeNull();

    expect((await tws(['stop'])).code).toBe(2);
    expect((await tws(['stop', a.sessionId, '--all'])).code).toBe(2);
    const stopped = await tws(['stop', '--all', '--json']);
    expect(stopped.code, stopped.stderr).toBe(0);
    const results = JSON.parse(stopped.stdout) as { id: string; state: string }[];
    expect(results.map((r) => r.id).sort()).toEqual([...running].sort());
    for (const r of results) expect(r.state).toBe('stopped');
    const rows = await h.pool.query<{ state: string }>('SELECT state FROM sessions WHERE id = ANY($1::uuid[])', [mine]);
    expect(rows.rows).toEqual([{ state: 'stopped' }, { state: 'stopped' }]);
    expect((await h.pool.query("SELECT count(*)::int AS n FROM executions WHERE status = 'running'")).rows[0].n).toBe(
      0,
    );
    expect(existsSync(a.worktree) && existsSync(b.worktree)).toBe(true);

    // Nothing left: the next run stops none, and the launcher has nothing to say.
    const again = await tws(['stop', '--all']);
    expect(again).toMatchObject({ code: 0, stdout: 'stopped 0 of 0 sessions\n' });
    expect(await agentsLeftLine(h.baseUrl, OPERATOR_TOKEN, h.config.hostId)).toBeNull();
    const one = await tws(['stop', a.sessionId]);
    expect(one).toMatchObject({ code: 0, stdout: `${a.sessionId} stopped\n` });
  });

  it('an API that does not answer: the launcher says it could not count, within its bound', async () => {
    const silent = http.createServer(() => {}); // accepts, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const started = Date.now();
      const line = await agentsLeftLine(
        `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        OPERATOR_TOKEN,
        h.config.hostId,
      );
      expect(line).toMatch(/^could not count the agents left running/);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});

/** A data folder as `make start` leaves it: the operator token and, optionally, the API's record. */
function dataFolder(token: string, api?: { url: string; pid: number; stopped?: boolean }): string {
  const dir = mkdtempSync(path.join(h.scratch, 'data-'));
  writeFileSync(path.join(dir, 'secrets.json'), JSON.stringify({ operatorToken: token }), { mode: 0o600 });
  if (api) writeFileSync(path.join(dir, 'api.json'), JSON.stringify(api), { mode: 0o600 });
  return dir;
}

const NO_INSTANCE_ENV = {
  TWS_API_URL: undefined,
  TWS_OPERATOR_TOKEN: undefined,
  TWS_USER_TOKEN: undefined,
  TWS_DATA_DIR: undefined,
};

describe("tws on an operator's machine", () => {
  it('runs as plain JavaScript from any folder: node loads .build/client/cli/cli.js and no TypeScript loader', async () => {
    // Every process of the tree says, as it exits, how it was started and what it loaded.
    const trace = path.join(h.scratch, 'process-tree.jsonl');
    const preload = path.join(h.scratch, 'trace-process.cjs');
    writeFileSync(
      preload,
      `process.on('exit', () => require('node:fs').appendFileSync(${JSON.stringify(trace)}, JSON.stringify({ argv: process.argv, execArgv: process.execArgv, loaded: Object.keys(require.cache) }) + '\\n'));\n`,
    );
    const outside = mkdtempSync(path.join(os.tmpdir(), 'tws-operator-'));
    const env: Record<string, string> = { NODE_OPTIONS: `--require ${preload}` };
    const res = await promisify(execFile)(process.execPath, [BIN, 'hosts', '--json'], {
      cwd: outside,
      env: { ...process.env, TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN, ...env },
      encoding: 'utf8',
    });
    expect(JSON.parse(res.stdout)).toContainEqual(expect.objectContaining({ hostId: h.config.hostId }));

    const tree = readFileSync(trace, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { argv: string[]; execArgv: string[]; loaded: string[] });
    expect(tree.length).toBeGreaterThan(0);
    expect(tree.flatMap((p) => p.loaded)).toContain(path.resolve('.build/client/cli/cli.js'));
    for (const p of tree) {
      expect([...p.argv, ...p.execArgv].join(' ')).not.toMatch(/tsx|\.ts\b/);
      expect(p.loaded.filter((file) => /node_modules|\.ts$/.test(file))).toEqual([]);
    }
  });

  it('not built: one line saying how to build, exit 3', async () => {
    const elsewhere = path.join(mkdtempSync(path.join(h.scratch, 'unbuilt-')), 'bin');
    mkdirSync(elsewhere);
    copyFileSync(BIN, path.join(elsewhere, 'tws.mjs'));
    const res = await tws(['jobs'], {}, path.join(elsewhere, 'tws.mjs'));
    expect(res.code).toBe(3);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(/make setup.*node scripts\/build\.mjs/);
  });

  it("--help and <command> --help exit 0 with that usage; a usage error exits 2 with the command's usage", async () => {
    const help = await tws(['--help'], NO_INSTANCE_ENV);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: tws <command>/);
    for (const c of Object.values(COMMANDS)) expect(help.stdout).toContain(c.usage);

    for (const [name, c] of Object.entries(COMMANDS)) {
      const own = await tws([name, '--help'], NO_INSTANCE_ENV);
      expect(own.code, name).toBe(0);
      const [first, second] = own.stdout.split('\n');
      expect(first!.startsWith(`usage: tws ${c.usage} `), first).toBe(true);
      expect(second).toBe(`  ${c.what}`);
    }
    expect((await tws(['help', 'logs'])).stdout).toMatch(/^usage: tws logs \[-f\] \[--tail N\] <sessionId>/);

    const wrong = await tws(['hosts', '--state', 'x']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/^tws: unknown option --state for hosts\nusage: tws hosts /);
    expect((await tws(['frobnicate', '--help'])).code).toBe(2);
    expect((await tws([])).code).toBe(2);
  });

  it('finds its instance in --data-dir (or TWS_DATA_DIR): api.json names the API, secrets.json the token; jobs print their Temporal link', async () => {
    const t = await stoppedTask('cli-data-dir');
    const { operationId } = await archive(h, t.taskId);
    await waitForJob(h, operationId);
    const link = (await h.api('GET', `/v1/cleanup-jobs/${operationId}`)).body.links.temporal as string;
    expect(link).toMatch(/^http/);

    const data = dataFolder(OPERATOR_TOKEN, { url: h.baseUrl, pid: process.pid });
    const jobs = await tws(['--data-dir', data, 'jobs', '--task', t.taskId], NO_INSTANCE_ENV);
    expect(jobs.code, jobs.stderr).toBe(0);
    expect(jobs.stdout.split('\n')[0]).toMatch(
      /^operationId\s+taskId\s+trigger\s+state\s+attempts\s+next\s+temporal\s+lastError$/,
    );
    expect(jobs.stdout).toContain(operationId);
    expect(jobs.stdout).toContain(link);

    const byEnv = await tws(['jobs', '--task', t.taskId, '--json'], { ...NO_INSTANCE_ENV, TWS_DATA_DIR: data });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    expect(JSON.parse(byEnv.stdout)).toEqual([expect.objectContaining({ operationId })]);
    // The record's own URL named again (another spelling) is still this instance: its token goes.
    const named = await tws(
      ['jobs', '--task', t.taskId, '--data-dir', data, '--api', `${h.baseUrl}/`],
      NO_INSTANCE_ENV,
    );
    expect(named.code, named.stderr).toBe(0);

    // A record whose launcher is gone is not believed: the configured port is the API then.
    const stale = dataFolder(OPERATOR_TOKEN, { url: 'http://127.0.0.1:9', pid: 2 ** 22 + 1 });
    const port = new URL(h.baseUrl).port;
    const derived = await tws(['jobs', '--task', t.taskId, '--data-dir', stale], {
      ...NO_INSTANCE_ENV,
      TWS_API_PORT: port,
    });
    expect(derived.code, derived.stderr).toBe(0);
    expect(derived.stdout).toContain(operationId);

    // The same instance's address spelled with localhost is that instance: its token goes, to the
    // address it recorded.
    const localhost = await tws(
      ['jobs', '--task', t.taskId, '--data-dir', data, '--api', `http://localhost:${port}`],
      NO_INSTANCE_ENV,
    );
    expect(localhost.code, localhost.stderr).toBe(0);
    expect(localhost.stdout).toContain(operationId);

    // A stopped instance's record names its own port: tws says that instance is not running,
    // rather than trying the default port.
    const closed = await new Promise<number>((resolve) => {
      const probe = http.createServer().listen(0, '127.0.0.1', () => {
        const free = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(free));
      });
    });
    const stopped = dataFolder(OPERATOR_TOKEN, { url: `http://127.0.0.1:${closed}`, pid: process.pid, stopped: true });
    const down = await tws(['jobs', '--data-dir', stopped], NO_INSTANCE_ENV);
    expect(down.code).toBe(3);
    expect(down.stderr.trim()).toBe(
      `tws: the API at http://127.0.0.1:${closed} does not answer: the instance of ${stopped} is not running (make start starts it)`,
    );
  });

  it("with an engine of the operator's and no TWS_TEMPORAL_UI_URL, jobs and job print no Temporal link", async () => {
    const t = await stoppedTask('cli-no-ui');
    const { operationId } = await archive(h, t.taskId);
    await waitForJob(h, operationId);
    // A gateway of the same instance whose engine is named by TEMPORAL_ADDRESS alone: no UI is known.
    const gateway = await h.spawnGateway({ TWS_TEMPORAL_UI_URL: '' });
    try {
      expect((await gateway.api('GET', `/v1/cleanup-jobs/${operationId}`)).body.links).toEqual({});
      const jobs = await tws(['jobs', '--task', t.taskId], { TWS_API_URL: gateway.url });
      expect(jobs.code, jobs.stderr).toBe(0);
      const [header, row] = jobs.stdout.split('\n');
      expect(header).toMatch(/\btemporal\b/);
      expect(row).toContain(operationId);
      expect(row).not.toMatch(/https?:/);
      const job = await tws(['job', operationId], { TWS_API_URL: gateway.url });
      expect(job.code, job.stderr).toBe(0);
      expect(job.stdout).toMatch(/^workflow: \S+$/m);
      expect(job.stdout).not.toMatch(/https?:/);
    } finally {
      gateway.child.kill('SIGTERM');
    }
  });

  it('tasks lists the active tasks, or the archived ones', async () => {
    const active = await stoppedTask('cli-tasks-active');
    const archived = await stoppedTask('cli-tasks-archived');
    await waitForJob(h, (await archive(h, archived.taskId)).operationId);
    const listed = await tws(['tasks', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const ids = (JSON.parse(listed.stdout) as { id: string; state: string }[]).map((x) => x.id);
    expect(ids).toContain(active.taskId);
    expect(ids).not.toContain(archived.taskId);
    const old = await tws(['tasks', '--archived']);
    expect(old.code, old.stderr).toBe(0);
    expect(old.stdout.split('\n')[0]).toMatch(/^id\s+title\s+state\s+workspaceMode\s+groupId\s+createdAt$/);
    expect(old.stdout).toContain(archived.taskId);
    expect(old.stdout).not.toContain(active.taskId);
  });

  it("never sends the data folder's token to an API that is not its own: without TWS_OPERATOR_TOKEN it exits 2, sending nothing", async () => {
    const heard: (string | undefined)[] = [];
    const spy = http.createServer((req, res) => {
      heard.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[],"nextCursor":null}');
    });
    await new Promise<void>((resolve) => spy.listen(0, '127.0.0.1', resolve));
    const elsewhere = `http://127.0.0.1:${(spy.address() as AddressInfo).port}`;
    try {
      const data = dataFolder('the-data-folders-token', { url: h.baseUrl, pid: process.pid });
      for (const [args, env] of [
        [['--data-dir', data, '--api', elsewhere, 'jobs'], NO_INSTANCE_ENV],
        [['jobs'], { ...NO_INSTANCE_ENV, TWS_DATA_DIR: data, TWS_API_URL: elsewhere }],
      ] as const) {
        const res = await tws([...args], env);
        expect(res.code, args.join(' ')).toBe(2);
        // jobs is a user's command: the variable it names is the user token's.
        expect(res.stderr.trim().split('\n')).toEqual([expect.stringMatching(/set TWS_USER_TOKEN to its user token/)]);
      }
      expect(heard).toEqual([]);

      // With TWS_OPERATOR_TOKEN, that one goes, and only that one.
      const given = await tws(['--data-dir', data, '--api', elsewhere, 'jobs'], {
        ...NO_INSTANCE_ENV,
        TWS_OPERATOR_TOKEN: 'the-operators-own',
      });
      expect(given.code, given.stderr).toBe(0);
      expect(heard).toEqual(['Bearer the-operators-own']);
    } finally {
      await new Promise((resolve) => spy.close(resolve));
    }
  });
});

/**
 * A new workspace made ready to work in (a repository's `copyFiles` and `setup`): real git, real
 * processes, the real sandbox. The files are copied from the source checkout with their modes and
 * never through a link; the setup runs once, as the workspace's agents run (its uid, its sandbox),
 * before the first agent, with its own log; a failing one warns, or with `refuse` undoes the
 * launch; an attach runs nothing; after an idle release the setup runs again, then the saved work
 * is restored over what it made.
 */
import { chmodSync, existsSync, readFileSync, statSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { containerEngineSocket, containerSettings, removeHostContainers } from './support/container-engine';
import { releaseIdleTask } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import { agentEnded, agentOutputUntil, createTask, expectSafeError, launch, waitUntil } from './support/scenario';
import { taskDirName } from '../domain/task-layout';
import { exitStatusPath } from '../executors/host/agent-shim';
import { setupLogPath } from '../executors/host/setup-run';
import { listDir, makeRepo, rowCounts } from './support/world';

const { harness, cleanups } = harnessesPerTest();
let h: Harness;

beforeAll(async () => {
  h = await harness({});
});

/** A repository whose checkout holds local files (untracked: `.env`, a nested config, a link to /etc), with these settings. */
async function preparedRepo(name: string, settings: Record<string, unknown>, on: Harness = h) {
  // Local files are ignored, as a project has them (a failed launch's undo then removes its worktree whole).
  const dir = makeRepo(on.scratch, name, {
    files: { 'README.md': '# r\n', 'version.txt': 'v1\n', '.gitignore': '.env\n.env.local\n.setup-runs\n' },
  });
  writeFileSync(path.join(dir, '.env'), 'SECRET=from-checkout\n', { mode: 0o600 });
  chmodSync(path.join(dir, '.env'), 0o600);
  mkdirSync(path.join(dir, 'config'), { recursive: true });
  writeFileSync(path.join(dir, 'config/local.dev.json'), '{"dev":true}\n');
  writeFileSync(path.join(dir, 'config/other.json'), '{}\n');
  symlinkSync('/etc/passwd', path.join(dir, '.env.local'));
  const res = await on.api('POST', '/v1/repositories', { name, path: dir, ...settings }, OPERATOR_TOKEN);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { dir, id: res.body.id as string };
}

const worktreeOf = async (on: Harness, environmentId: string) =>
  (
    await on.pool.query("SELECT worktree_path FROM environment_repos WHERE environment_id = $1 AND status = 'active'", [
      environmentId,
    ])
  ).rows[0]!.worktree_path as string;

const setupLog = async (on: Harness, sessionId: string) =>
  on
    .api('GET', `/v1/sessions/${sessionId}/logs?source=setup`)
    .then((r) => ({ status: r.status, text: String(r.body) }));

describe('a new workspace made ready', () => {
  it('copies the files asked for (never a link), runs the setup as the agent uid before the agent, and says so', async () => {
    const repo = await preparedRepo('ready', {
      copyFiles: ['.env', 'config/local.*.json', '.env.local'],
      setup: ['sh', '-c', 'echo setting up as $(id -u); echo ran >> .setup-runs; echo made > setup-made.txt'],
    });
    const taskId = await createTask(h, [repo.id]);
    const res = await launch(h, taskId, { command: ['sh', '-c', 'cat setup-made.txt .env; echo agent-done'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.setup).toMatchObject({ status: 'succeeded', exitCode: 0, repositoryId: repo.id });
    expect(res.body.copied.files.sort()).toEqual(['.env', 'config/local.dev.json']);
    expect(res.body.copied.skipped).toEqual([{ path: '.env.local', reason: 'symlink' }]);
    // The agent started after the setup, in what it made, with the copied file there.
    const out = await agentOutputUntil(h, res.body.executionId, 'agent-done');
    expect(out).toContain('made');
    expect(out).toContain('SECRET=from-checkout');
    const wt = await worktreeOf(h, res.body.taskEnvironmentId);
    expect(statSync(path.join(wt, '.env')).mode & 0o777).toBe(0o600);
    expect(existsSync(path.join(wt, '.env.local'))).toBe(false);
    expect(existsSync(path.join(wt, 'config/other.json'))).toBe(false);
    // As the workspace's uid, never the service's: the file it made is that uid's.
    const log = await setupLog(h, res.body.sessionId);
    expect(log.status).toBe(200);
    const uid = Number(/setting up as (\d+)/.exec(log.text)![1]);
    expect(uid).toBeGreaterThanOrEqual(200000);
    expect(statSync(path.join(wt, 'setup-made.txt')).uid).toBe(uid);
    // The session's view says it too; the checkout is as it was.
    const view = await h.api('GET', `/v1/sessions/${res.body.sessionId}`);
    expect(view.body.preparation.setup).toMatchObject({ status: 'succeeded', exitCode: 0 });
    expect(view.body.preparation.copied.skipped).toEqual([{ path: '.env.local', reason: 'symlink' }]);
    // And the task's, of its workspace as it was made.
    const task = await h.api('GET', `/v1/tasks/${taskId}`);
    expect(task.body.environment.preparation.setup).toMatchObject({ status: 'succeeded', repositoryId: repo.id });
    expect(task.body.environment.preparation.copied.files.sort()).toEqual(['.env', 'config/local.dev.json']);
    expect(readFileSync(path.join(repo.dir, '.env'), 'utf8')).toBe('SECRET=from-checkout\n');

    // An attach runs nothing and copies nothing [R1.2].
    writeFileSync(path.join(wt, '.env'), 'EDITED=1\n');
    const attached = await launch(h, taskId, { command: ['true'] });
    expect(attached.status, JSON.stringify(attached.body)).toBe(201);
    expect(attached.body).toMatchObject({ role: 'attached', setup: null, copied: null });
    await agentEnded(h, attached.body.sessionId);
    expect(readFileSync(path.join(wt, '.setup-runs'), 'utf8')).toBe('ran\n');
    expect(readFileSync(path.join(wt, '.env'), 'utf8')).toBe('EDITED=1\n');
  });

  it('a failing setup warns and the launch goes on; with refuse the launch is undone and nothing is left', async () => {
    const warned = await preparedRepo('warns', { setup: ['sh', '-c', 'echo broken >&2; exit 3'] });
    const warnTask = await createTask(h, [warned.id]);
    const goes = await launch(h, warnTask, { command: ['true'] });
    expect(goes.status, JSON.stringify(goes.body)).toBe(201);
    expect(goes.body.setup).toMatchObject({ status: 'failed', exitCode: 3 });
    expect((await h.api('GET', `/v1/tasks/${warnTask}`)).body.environment.preparation.setup).toMatchObject({
      status: 'failed',
      exitCode: 3,
    });
    expect((await setupLog(h, goes.body.sessionId)).text).toContain('broken');

    const refusing = await preparedRepo('refuses', {
      copyFiles: ['.env'],
      setup: ['sh', '-c', 'echo refusing; exit 4'],
      setupFailure: 'refuse',
    });
    const refuseTask = await createTask(h, [refusing.id]);
    const root = listDir(h.config.workspaceRoot);
    const rows = await rowCounts(h.pool);
    const refused = await launch(h, refuseTask, { command: ['true'] });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expectSafeError(refused.body, 'workspace_setup_failed', [refusing.dir]);
    expect(listDir(h.config.workspaceRoot)).toEqual(root);
    expect((await rowCounts(h.pool)).environment_repos).toBe(rows.environment_repos);
    expect((await rowCounts(h.pool)).executions).toBe(rows.executions);
    // The refusal says which repository's setup and how it ended.
    expect(refused.body.error).toMatchObject({ repositoryId: refusing.id, status: 'failed', exitCode: 4 });
  });

  it('a setup cannot write outside its workspace or read a service file', async () => {
    const secrets = path.join(h.config.dataDir, 'secrets.json');
    writeFileSync(secrets, JSON.stringify({ operatorToken: OPERATOR_TOKEN }), { mode: 0o600 });
    const repo = await preparedRepo('contained', {
      setup: [
        'sh',
        '-c',
        `cat ${secrets} 2>&1 | head -1; touch ${path.join(h.scratch, 'escaped')} 2>&1 | head -1; echo x >> ../../outside 2>&1 | head -1; echo tried`,
      ],
    });
    const taskId = await createTask(h, [repo.id]);
    const res = await launch(h, taskId, { command: ['true'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const log = (await setupLog(h, res.body.sessionId)).text;
    expect(log).toContain('tried');
    expect(log).not.toContain(OPERATOR_TOKEN);
    expect(existsSync(path.join(h.scratch, 'escaped'))).toBe(false);
  });

  it('two launches of a new task at once run its setup once', async () => {
    const repo = await preparedRepo('once', { setup: ['sh', '-c', 'echo ran >> .setup-runs; sleep 1'] });
    const taskId = await createTask(h, [repo.id]);
    const both = await Promise.all([
      launch(h, taskId, { command: ['true'] }),
      launch(h, taskId, { command: ['true'] }),
    ]);
    const made = both.find((r) => r.status === 201 && r.body.role === 'materialized')!;
    expect(made, JSON.stringify(both.map((r) => r.body))).toBeTruthy();
    for (const r of both) if (r !== made) expect([201, 409]).toContain(r.status);
    const wt = await worktreeOf(h, made.body.taskEnvironmentId);
    expect(readFileSync(path.join(wt, '.setup-runs'), 'utf8')).toBe('ran\n');
  });

  it('after an idle release the setup and the copies run again, then the saved work is restored over them', async () => {
    const repo = await preparedRepo('released', {
      copyFiles: ['.env'],
      setup: ['sh', '-c', 'echo from-setup > version.txt; echo ran >> .setup-runs'],
    });
    const taskId = await createTask(h, [repo.id]);
    const first = await launch(h, taskId, {
      command: ['sh', '-c', 'echo from-agent > version.txt; echo AGENT=1 > .env; echo notes > notes.txt'],
    });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    await agentEnded(h, first.body.sessionId);
    const job = await releaseIdleTask(h, taskId);
    expect(job.report.worktrees[0].outcome).toBe('saved_and_removed');
    const again = await launch(h, taskId, { command: ['true'] });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.setup).toMatchObject({ status: 'succeeded' });
    expect(again.body.copied.files).toEqual(['.env']);
    const wt = await worktreeOf(h, again.body.taskEnvironmentId);
    // The setup ran in the new worktree (its own file), and the agent's work won over what it and the copy wrote.
    expect(readFileSync(path.join(wt, '.setup-runs'), 'utf8')).toBe('ran\n');
    expect(readFileSync(path.join(wt, 'version.txt'), 'utf8')).toBe('from-agent\n');
    expect(readFileSync(path.join(wt, '.env'), 'utf8')).toBe('AGENT=1\n');
    expect(readFileSync(path.join(wt, 'notes.txt'), 'utf8')).toBe('notes\n');
    const view = await h.api('GET', `/v1/sessions/${again.body.sessionId}`);
    expect(view.body.restore).toBe('applied');
    // The task's view is of the workspace as it was made last.
    const task = await h.api('GET', `/v1/tasks/${taskId}`);
    expect(task.body.environment.preparation.copied.files).toEqual(['.env']);
    // Given to the agent uid as a whole, restored files too.
    const setupUid = statSync(path.join(wt, '.setup-runs')).uid;
    expect(statSync(path.join(wt, 'version.txt')).uid).toBe(setupUid);
  });

  it('a container workspace runs its setup in the container', async () => {
    const socket = await containerEngineSocket();
    const c = await harness({ containers: containerSettings(socket), agentNetwork: 'none' });
    cleanups.push(() => removeHostContainers(c.config.hostId));
    const repo = await preparedRepo('in-container', { setup: ['sh', '-c', 'head -1 /etc/os-release; id -u'] }, c);
    const taskId = await createTask(c, [repo.id]);
    const res = await launch(c, taskId, { executorType: 'container', command: ['true'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.setup).toMatchObject({ status: 'succeeded' });
    const log = (await setupLog(c, res.body.sessionId)).text;
    expect(log).toContain('Debian GNU/Linux 12 (bookworm)');
  });
});

describe('a setup whose worker dies', () => {
  it('is adopted by the step that runs again: waited for, never run twice', async () => {
    const w = await harness({}, { inProcessWorker: false });
    let worker: ChildProcess = w.spawnWorker();
    cleanups.push(() => void worker.kill('SIGKILL'));
    const repo = await preparedRepo(
      'adopted',
      { setup: ['sh', '-c', 'echo started >> .setup-runs; sleep 12; echo done >> .setup-runs'] },
      w,
    );
    const taskId = await createTask(w, [repo.id]);
    const launched = launch(w, taskId, { command: ['sh', '-c', 'cat .setup-runs; echo agent-done'] });
    const runs = path.join(w.config.workspaceRoot, taskDirName(taskId), 'adopted', '.setup-runs');
    await waitUntil(async () => existsSync(runs), 'the setup to start', 60_000);
    worker.kill('SIGKILL');
    await new Promise((resolve) => worker.once('exit', resolve));
    worker = w.spawnWorker();
    const res = await launched;
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // The step ran again (no worker answered its heartbeat) and waited for the setup the first run started.
    expect(res.body.setup).toMatchObject({ status: 'succeeded', exitCode: 0 });
    expect(readFileSync(runs, 'utf8')).toBe('started\ndone\n');
    expect(await agentOutputUntil(w, res.body.executionId, 'agent-done')).toContain('started\ndone');
  });
});

describe('a setup adopted after its worker died', () => {
  it('gets only what was left of its time limit, measured from its own start, not a new full one', async () => {
    const limitMs = 12_000;
    const w = await harness({}, { inProcessWorker: false });
    const env = { TWS_SETUP_TIMEOUT_MS: String(limitMs) };
    let worker: ChildProcess = w.spawnWorker(env);
    cleanups.push(() => void worker.kill('SIGKILL'));
    // It writes when it started (ms), then outlives any limit.
    const repo = await preparedRepo('limited', { setup: ['sh', '-c', 'date +%s%3N > .setup-runs; sleep 120'] }, w);
    const taskId = await createTask(w, [repo.id]);
    const launched = launch(w, taskId, { command: ['sh', '-c', 'echo agent-done'] });
    const runs = path.join(w.config.workspaceRoot, taskDirName(taskId), 'limited', '.setup-runs');
    await waitUntil(async () => existsSync(runs) && readFileSync(runs, 'utf8').endsWith('\n'), 'the setup to start');
    const startedAt = Number(readFileSync(runs, 'utf8').trim());
    // Half of its limit used before its worker dies: the step runs again seconds later.
    await new Promise((r) => setTimeout(r, Math.max(0, startedAt + 6000 - Date.now())));
    worker.kill('SIGKILL');
    await new Promise((resolve) => worker.once('exit', resolve));
    worker = w.spawnWorker(env);
    const res = await launched;
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.setup).toMatchObject({ status: 'timed_out' });
    // Its end as its supervisor recorded it: its limit after its start. The step ran again after
    // the lost worker's workflow task timed out (5 s at most): a new full limit from there ended it
    // at 6 s + that + the limit, after the bound (which leaves a loaded machine 5.5 s to record the end).
    const sessionId = res.body.sessionId as string;
    const logPath = setupLogPath(w.config.logDir, { taskId, sessionId }, repo.id);
    const ranMs = statSync(exitStatusPath(logPath)).mtimeMs - startedAt;
    expect(ranMs).toBeGreaterThanOrEqual(limitMs - 1000);
    expect(ranMs).toBeLessThan(limitMs + 5500);
  });
});

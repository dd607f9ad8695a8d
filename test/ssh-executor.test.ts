/**
 * The `ssh` executor against a real OpenSSH server on 127.0.0.1 (test/support/ssh-server.ts):
 * first launch makes a clone per repository on the target, attach is read-only there, a stale
 * remote folder / a target that is down / a changed host key refuse with nothing touched,
 * transitions keep the other executor's workspace, and cleanup removes the remote clone after
 * bringing its branch back to the host repository (nothing is pushed anywhere).
 * The target is this machine, so its files are also checked directly on disk.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { agentProcessActivities } from '../activities/agent-process';
import { getSshTarget } from '../db/ssh-targets';
import { recordSpawnIntent } from '../db/spawn-intents';
import { startRemoteAgent } from '../ssh/remote-agent';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recoverAgents } from '../executors/registry';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { closeSshConnections } from '../ssh/connection';
import { runRemote } from '../ssh/remote-exec';
import { releaseIdleTask, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import {
  agentOutputUntil,
  createTask,
  expectSafeError,
  launch,
  pidOf,
  registerRepo,
  waitUntil,
} from './support/scenario';
import { startSshServer, targetFields, type SshServer } from './support/ssh-server';
import {
  branches,
  commitOf,
  fingerprint,
  git,
  makeRepo,
  processAlive,
  rowCounts,
  worktreePaths,
} from './support/world';
import { makeWork, statusOf, WORK_REPO_FILES, WORK_STATUS, workOf } from './support/work-of-every-kind';

let h: Harness;
let ssh: SshServer;
let targetId: string;
let n = 0;

beforeAll(async () => {
  // Disk measured often enough for the clone's measurement to be seen within the test.
  [h, ssh] = await Promise.all([createHarness({ diskMeasureEveryMs: 1500 }), startSshServer()]);
  const res = await h.api('POST', '/v1/ssh-targets', { name: 'box', ...targetFields(ssh) }, OPERATOR_TOKEN);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  targetId = res.body.id;
  // The operator's CLI lists it, never its key.
  const cli = await promisify(execFile)(path.resolve('bin/tws.mjs'), ['ssh-targets', '--json'], {
    env: { ...process.env, TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN },
    encoding: 'utf8',
  });
  expect(JSON.parse(cli.stdout).map((t: any) => t.id)).toEqual([targetId]);
  expect(cli.stdout).not.toContain(ssh.privateKeyPath);
});
afterAll(async () => {
  await h?.close();
  await closeSshConnections();
  await ssh?.remove();
});

const sshLaunch = (taskId: string, body: Record<string, unknown> = {}) =>
  launch(h, taskId, { executorType: 'ssh', sshTargetId: targetId, ...body });

async function sshTask(executorType: 'ssh' | 'worktree' = 'ssh', files?: Record<string, string>) {
  const name = `ssh-${++n}`;
  const repo = makeRepo(h.scratch, name, files ? { files } : {});
  const repoId = await registerRepo(h, repo, name);
  const taskId = await createTask(h, [repoId]);
  const first = executorType === 'ssh' ? await sshLaunch(taskId) : await launch(h, taskId, { executorType });
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  const remoteFolder = path.join(ssh.workspaceRoot, taskDirName(taskId));
  return {
    name,
    repo,
    repoId,
    taskId,
    first: first.body,
    remoteFolder,
    remoteClone: path.join(remoteFolder, name),
    hostWorktree: path.join(h.config.workspaceRoot, taskDirName(taskId), name),
  };
}

/** The agent's working directory, read from the target's own /proc over SSH. */
async function remoteCwd(pid: number): Promise<string> {
  const res = await runRemote({ id: targetId, ...targetFields(ssh) }, 'readlink -- "/proc/$1/cwd"', [String(pid)]);
  expect(res.code).toBe(0);
  return res.stdout.toString().trim();
}

const envOf = async (id: string) =>
  (
    await h.pool.query(
      'SELECT executor_type, ssh_target_id, workspace_path, task_folder, status FROM task_environments WHERE id = $1',
      [id],
    )
  ).rows[0];
const rowsOf = async (id: string) =>
  (
    await h.pool.query(
      'SELECT executor_type, worktree_id, worktree_path, worktree_branch, ssh_target_id, status FROM environment_repos WHERE environment_id = $1 ORDER BY created_at',
      [id],
    )
  ).rows;

describe('first launch and attach', () => {
  it('makes a clone on the target on the task branch, runs the agent there in its own group, and leaves the host repository untouched', async () => {
    const t = await sshTask();
    expect(t.first).toMatchObject({ role: 'materialized', state: 'running' });
    expect(git(t.remoteClone, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe(taskBranchName(t.taskId));
    expect(git(t.remoteClone, 'rev-parse', 'HEAD')).toBe(commitOf(t.repo, 'main'));
    expect(git(t.remoteClone, 'remote')).toBe(''); // a clone of a bundle, with no remote left behind
    expect(JSON.parse(readFileSync(path.join(t.remoteFolder, '.task-workspace.json'), 'utf8'))).toMatchObject({
      taskId: t.taskId,
      environmentId: t.first.taskEnvironmentId,
    });
    expect(await envOf(t.first.taskEnvironmentId)).toEqual({
      executor_type: 'ssh',
      ssh_target_id: targetId,
      workspace_path: t.remoteClone,
      task_folder: t.remoteFolder,
      status: 'ready',
    });
    expect((await h.api('GET', `/v1/tasks/${t.taskId}`)).body.environment).toMatchObject({
      executorType: 'ssh',
      sshTargetId: targetId,
    });
    expect(await rowsOf(t.first.taskEnvironmentId)).toEqual([
      {
        executor_type: 'ssh',
        worktree_id: null,
        worktree_path: t.remoteClone,
        worktree_branch: taskBranchName(t.taskId),
        ssh_target_id: targetId,
        status: 'active',
      },
    ]);
    // Nothing on the host: no worktree, no task branch, no task folder.
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    expect(branches(t.repo)).toEqual(['main']);
    expect(existsSync(path.join(h.config.workspaceRoot, taskDirName(t.taskId)))).toBe(false);
    const exec = (
      await h.pool.query('SELECT pid, process_start_time, cwd, ssh_target_id, status FROM executions WHERE id = $1', [
        t.first.executionId,
      ])
    ).rows[0];
    expect(exec).toMatchObject({ cwd: t.remoteClone, ssh_target_id: targetId, status: 'running' });
    expect(await remoteCwd(exec.pid)).toBe(t.remoteClone);
    const stat = readFileSync(`/proc/${exec.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    expect(fields[19]).toBe(exec.process_start_time);
    expect(Number(fields[2])).toBe(exec.pid); // its own process group
  });

  it('attaches byte-for-byte: a second session gets its own agent in the same clone and nothing of the clone changes', async () => {
    const t = await sshTask();
    writeFileSync(path.join(t.remoteClone, 'work.txt'), 'in progress\n');
    const before = {
      clone: fingerprint(t.remoteClone),
      status: git(t.remoteClone, 'status', '--porcelain'),
      head: git(t.remoteClone, 'rev-parse', 'HEAD'),
    };
    const second = await sshLaunch(t.taskId);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body).toMatchObject({ role: 'attached', taskEnvironmentId: t.first.taskEnvironmentId });
    const pids = [await pidOf(h, t.first.sessionId), await pidOf(h, second.body.sessionId)];
    expect(pids[0]).not.toBe(pids[1]);
    expect(await remoteCwd(pids[1]!)).toBe(t.remoteClone);
    expect(fingerprint(t.remoteClone)).toBe(before.clone);
    expect(git(t.remoteClone, 'status', '--porcelain')).toBe(before.status);
    expect(git(t.remoteClone, 'rev-parse', 'HEAD')).toBe(before.head);
    // Without naming the target, a launch attaches to the one the workspace is on.
    const third = await launch(h, t.taskId, { executorType: 'ssh' });
    expect(third.status, JSON.stringify(third.body)).toBe(201);
    expect(third.body.role).toBe('attached');
  });

  it("measures the clone's bytes on the target, untracked files too [R6.11]", async () => {
    const t = await sshTask();
    writeFileSync(path.join(t.remoteClone, 'big-untracked.bin'), Buffer.alloc(2 * 1024 * 1024, 3));
    let disk: any = null;
    await waitUntil(async () => {
      disk = (await h.api('GET', `/v1/tasks/${t.taskId}`)).body.disk;
      return disk !== null && disk.bytes >= 2 * 1024 * 1024;
    }, "the clone's measurement");
    expect(disk.bytes).toBeLessThan(8 * 1024 * 1024);
  });

  it('records how a remote agent ended, read from the target', async () => {
    const name = `ssh-exit-${++n}`;
    const repo = makeRepo(h.scratch, name);
    const taskId = await createTask(h, [await registerRepo(h, repo, name)]);
    const res = await sshLaunch(taskId, { command: ['sh', '-c', 'echo remote-out; exit 3'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await waitUntil(async () => {
      await recoverAgents({ pool: h.pool, config: h.config, logger: pino({ level: 'silent' }) }, h.config.hostId);
      return (
        (await h.pool.query('SELECT status FROM executions WHERE id = $1', [res.body.executionId])).rows[0].status !==
        'running'
      );
    }, 'the remote agent to be seen ended');
    const exec = (
      await h.pool.query('SELECT status, exit_code, signal, log_path FROM executions WHERE id = $1', [
        res.body.executionId,
      ])
    ).rows[0];
    expect(exec).toMatchObject({ status: 'exited', exit_code: 3, signal: null });
    expect(readFileSync(exec.log_path, 'utf8')).toContain('remote-out');
  });
});

describe('the session on the target: status, logs, resume', () => {
  it('git status is read on the target, read-only; the log is read from the target, tail and follow', async () => {
    const t = await sshTask();
    writeFileSync(path.join(t.remoteClone, 'new.txt'), 'x\n');
    const indexBefore = fingerprint(path.join(t.remoteClone, '.git'), ['objects', 'logs']);
    const status = await h.api('GET', `/v1/tasks/${t.taskId}/git-status`);
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    expect(status.body.repositories).toEqual([
      expect.objectContaining({
        repositoryId: t.repoId,
        branch: taskBranchName(t.taskId),
        head: commitOf(t.repo, 'main'),
        ahead: 0,
        behind: 0,
        files: [{ path: 'new.txt', status: '??' }],
      }),
    ]);
    expect(fingerprint(path.join(t.remoteClone, '.git'), ['objects', 'logs'])).toBe(indexBefore);

    const name = `ssh-log-${++n}`;
    const repo = makeRepo(h.scratch, name);
    const taskId = await createTask(h, [await registerRepo(h, repo, name)]);
    const res = await sshLaunch(taskId, { command: ['sh', '-c', 'echo one; echo two; sleep 1; echo three'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const text = async (route: string) => {
      const got = await fetch(h.baseUrl + route, { headers: { authorization: `Bearer ${USER_TOKEN}` } });
      return { status: got.status, body: await got.text() };
    };
    // Follow streams until the remote agent is seen ended (the exit check, run here as the worker would).
    const checking = setInterval(
      () =>
        void recoverAgents(
          { pool: h.pool, config: h.config, logger: pino({ level: 'silent' }) },
          h.config.hostId,
        ).catch(() => undefined),
      300,
    );
    try {
      const followed = await text(`/v1/sessions/${res.body.sessionId}/logs?follow=1`);
      // The runner's first line says which limits hold on this target, then the agent's output.
      expect(followed.status).toBe(200);
      expect(followed.body).toMatch(/^task-workspaces: limits on this target \(ulimit\): [^\n]*\none\ntwo\nthree\n$/);
    } finally {
      clearInterval(checking);
    }
    expect(await text(`/v1/sessions/${res.body.sessionId}/logs?tail=1`)).toEqual({ status: 200, body: 'three\n' });
  });

  it('a start interrupted before its record (the worker died) is adopted on its re-run, never started twice', async () => {
    const t = await sshTask();
    const executionId = randomUUID();
    const target = await getSshTarget(h.pool, targetId);
    const runs = path.posix.join(ssh.workspaceRoot, '.task-workspaces', 'runs', t.taskId, t.first.sessionId);
    // The earlier try: its intent committed, its agent started on the target, then nothing recorded.
    await recordSpawnIntent(h.pool, {
      executionId,
      sessionId: t.first.sessionId,
      taskId: t.taskId,
      hostId: h.config.hostId,
    });
    const earlier = await startRemoteAgent(target!, {
      cwd: t.remoteClone,
      logPath: `${runs}/${executionId}.log`,
      statusPath: `${runs}/${executionId}.exit`,
      env: { TWS_EXECUTION_ID: executionId },
      argv: ['sleep', '600'],
    });
    if ('notStartable' in earlier) throw new Error('the earlier start did not start');
    const logger = pino({ level: 'silent' });
    const again = await agentProcessActivities({ pool: h.pool, config: h.config, logger }).startAgent({
      executionId,
      sessionId: t.first.sessionId,
      taskId: t.taskId,
      environmentId: t.first.taskEnvironmentId,
      environmentTaskId: t.taskId,
      cwd: t.remoteClone,
      command: ['sleep', '600'],
      sshTargetId: targetId,
    });
    expect(again).toEqual({ executionId, pid: earlier.pid, status: 'running' });
    expect(
      (await h.pool.query('SELECT pid, process_start_time, ssh_target_id FROM executions WHERE id = $1', [executionId]))
        .rows[0],
    ).toEqual({ pid: earlier.pid, process_start_time: earlier.startTime, ssh_target_id: targetId });
    expect((await h.pool.query('SELECT 1 FROM spawn_intents WHERE execution_id = $1', [executionId])).rowCount).toBe(0);
    // One agent under that mark: the adopted one.
    const marked = execFileSync(
      'sh',
      ['-c', `grep -lzx TWS_EXECUTION_ID=${executionId} /proc/[0-9]*/environ 2>/dev/null || true`],
      { encoding: 'utf8' },
    )
      .trim()
      .split('\n')
      .filter(Boolean);
    expect(marked).toHaveLength(1);
  });

  it('a resume stops the previous remote agent, validates the clone on the target and starts a new agent there', async () => {
    const t = await sshTask();
    const firstPid = await pidOf(h, t.first.sessionId);
    const resumed = await h.api('POST', `/v1/sessions/${t.first.sessionId}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const pid = await pidOf(h, t.first.sessionId);
    expect(pid).not.toBe(firstPid);
    expect(processAlive(firstPid)).toBe(false);
    expect(await remoteCwd(pid)).toBe(t.remoteClone);
    const execs = (
      await h.pool.query('SELECT status, ssh_target_id FROM executions WHERE session_id = $1 ORDER BY started_at', [
        t.first.sessionId,
      ])
    ).rows;
    expect(execs).toEqual([
      { status: 'stopped', ssh_target_id: targetId },
      { status: 'running', ssh_target_id: targetId },
    ]);
    // A stop goes to the target too.
    const stopped = await h.api('POST', `/v1/sessions/${t.first.sessionId}/stop`, {});
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
    expect(processAlive(pid)).toBe(false);
  });
});

describe('refusals touch nothing', () => {
  async function expectRefused(
    taskId: string,
    status: number,
    code: string,
    watch: string[],
    body: Record<string, unknown> = {},
  ) {
    const before = { rows: await rowCounts(h.pool), files: watch.map((d) => fingerprint(d)) };
    const res = await sshLaunch(taskId, body);
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expectSafeError(res.body, code, [ssh.workspaceRoot, ssh.privateKeyPath, String(ssh.port)]);
    const after = await rowCounts(h.pool);
    expect({
      sessions: after.sessions,
      executions: after.executions,
      environment_repos: after.environment_repos,
    }).toEqual({
      sessions: before.rows.sessions,
      executions: before.rows.executions,
      environment_repos: before.rows.environment_repos,
    });
    expect(watch.map((d) => fingerprint(d))).toEqual(before.files);
    return res.body;
  }

  it('a target that is not one (malformed, unknown, or given to another executor) is a 4xx with nothing started', async () => {
    const name = `ssh-input-${++n}`;
    const taskId = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, name), name)]);
    const before = await rowCounts(h.pool);
    const cases: [Record<string, unknown>, number, string][] = [
      [{ executorType: 'ssh', sshTargetId: 'not-a-uuid' }, 400, 'invalid_request'],
      [{ executorType: 'ssh', sshTargetId: '00000000-0000-4000-8000-000000000000' }, 404, 'not_found'],
      [{ executorType: 'worktree', sshTargetId: targetId }, 400, 'invalid_request'],
      [{ executorType: 'ssh', sshTargetId: null }, 400, 'invalid_request'],
    ];
    for (const [body, status, code] of cases) {
      const res = await launch(h, taskId, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expectSafeError(res.body, code);
    }
    // ssh with no target named and none in use: the answer says which field is needed.
    const none = await launch(h, taskId, { executorType: 'ssh' });
    expect(none.status).toBe(400);
    expectSafeError(none.body, 'invalid_request');
    expect(none.body.error.message).toMatch(/^executorType ssh needs sshTargetId\b/);
    expect(await rowCounts(h.pool)).toEqual(before);
  });

  it('a stale remote folder (replaced by another directory) is refused workspace_reuse_unsafe, never re-cloned', async () => {
    const t = await sshTask();
    renameSync(t.remoteClone, `${t.remoteClone}-moved`);
    mkdirSync(t.remoteClone);
    writeFileSync(path.join(t.remoteClone, 'stranger.txt'), 'not a clone\n');
    await expectRefused(t.taskId, 409, 'workspace_reuse_unsafe', [t.remoteFolder]);
    // Missing altogether: refused too, and nothing is made in its place.
    rmSync(t.remoteClone, { recursive: true });
    await expectRefused(t.taskId, 409, 'workspace_reuse_unsafe', [t.remoteFolder]);
    expect(existsSync(t.remoteClone)).toBe(false);
  });

  it('a clone on another branch, or a marker naming another task, is refused', async () => {
    const t = await sshTask();
    git(t.remoteClone, 'checkout', '-q', '-b', 'elsewhere');
    await expectRefused(t.taskId, 409, 'workspace_reuse_unsafe', [t.remoteFolder]);
    git(t.remoteClone, 'checkout', '-q', taskBranchName(t.taskId));
    const markerPath = path.join(t.remoteFolder, '.task-workspace.json');
    const marker = JSON.parse(readFileSync(markerPath, 'utf8'));
    writeFileSync(markerPath, JSON.stringify({ ...marker, taskId: '00000000-0000-4000-8000-000000000000' }));
    await expectRefused(t.taskId, 409, 'workspace_reuse_unsafe', [t.remoteFolder]);
  });

  it('a target that is down is ssh_target_unavailable (recoverable) with nothing changed, on attach and on a first launch', async () => {
    const t = await sshTask();
    const name = `ssh-down-${++n}`;
    const repo = makeRepo(h.scratch, name);
    const fresh = await createTask(h, [await registerRepo(h, repo, name)]);
    await ssh.stop();
    try {
      const body = await expectRefused(t.taskId, 503, 'ssh_target_unavailable', [t.remoteFolder]);
      expect(body.error).toMatchObject({ recoverable: true, action: 'retry' });
      const before = await rowCounts(h.pool);
      const res = await sshLaunch(fresh);
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expectSafeError(res.body, 'ssh_target_unavailable', [ssh.workspaceRoot]);
      expect((await rowCounts(h.pool)).sessions).toBe(before.sessions);
      expect(existsSync(path.join(ssh.workspaceRoot, taskDirName(fresh)))).toBe(false);
    } finally {
      await ssh.start();
    }
    // Back up: the same attach succeeds, in the same clone.
    const again = await sshLaunch(t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(await remoteCwd(await pidOf(h, again.body.sessionId))).toBe(t.remoteClone);
  });

  it('a host key that no longer matches the pinned one is ssh_host_key_mismatch (an operator decides), with nothing changed', async () => {
    const t = await sshTask();
    const pinned = (await h.pool.query('SELECT known_hosts FROM ssh_targets WHERE id = $1', [targetId])).rows[0]
      .known_hosts;
    await h.pool.query('UPDATE ssh_targets SET known_hosts = $2 WHERE id = $1', [
      targetId,
      await ssh.otherHostKnownHostsLine(),
    ]);
    try {
      const body = await expectRefused(t.taskId, 409, 'ssh_host_key_mismatch', [t.remoteFolder]);
      expect(body.error).toMatchObject({ recoverable: false, action: 'operator' });
    } finally {
      await h.pool.query('UPDATE ssh_targets SET known_hosts = $2 WHERE id = $1', [targetId, pinned]);
    }
  });
});

describe('transitions and cleanup', () => {
  it('worktree → ssh → worktree: each target workspace is made afresh, the previous one retained untouched; the archive removes both', async () => {
    const t = await sshTask('worktree');
    const envId = t.first.taskEnvironmentId;
    const hostBefore = fingerprint(t.hostWorktree);
    const toSsh = await sshLaunch(t.taskId);
    expect(toSsh.status, JSON.stringify(toSsh.body)).toBe(201);
    expect(toSsh.body).toMatchObject({ role: 'transitioned', taskEnvironmentId: envId });
    expect(await remoteCwd(await pidOf(h, toSsh.body.sessionId))).toBe(t.remoteClone);
    expect(fingerprint(t.hostWorktree)).toBe(hostBefore);
    expect(await envOf(envId)).toMatchObject({
      executor_type: 'ssh',
      ssh_target_id: targetId,
      workspace_path: t.remoteClone,
      task_folder: t.remoteFolder,
    });
    expect((await rowsOf(envId)).map((r: any) => [r.executor_type, r.status])).toEqual([
      ['worktree', 'retained'],
      ['ssh', 'active'],
    ]);

    const back = await launch(h, t.taskId, { executorType: 'worktree' });
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect(back.body.role).toBe('transitioned');
    expect(await envOf(envId)).toMatchObject({
      executor_type: 'worktree',
      ssh_target_id: null,
      workspace_path: t.hostWorktree,
    });
    expect(existsSync(t.remoteClone)).toBe(true); // the ssh clone is retained, not reused, not removed
    // Back in the host worktree's folder: its row is active again, one row for the folder.
    const rows = await rowsOf(envId);
    expect(rows.filter((r: any) => r.status === 'retained').map((r: any) => r.executor_type)).toEqual(['ssh']);
    expect(rows.filter((r: any) => r.status === 'active').map((r: any) => r.executor_type)).toEqual(['worktree']);

    const archived = await h.api('POST', `/v1/tasks/${t.taskId}/archive`, {});
    expect(archived.status, JSON.stringify(archived.body)).toBe(202);
    const job = await waitForJob(h, archived.body.operationId);
    expect(job.report.worktrees.map((w: any) => w.outcome)).toEqual(expect.arrayContaining(['removed']));
    expect(existsSync(t.remoteClone)).toBe(false);
    expect(existsSync(t.remoteFolder)).toBe(false);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
  });

  it('archive stops the remote agents and removes the clone after bringing its commits back to the host repository', async () => {
    const t = await sshTask();
    const pid = await pidOf(h, t.first.sessionId);
    writeFileSync(path.join(t.remoteClone, 'feature.txt'), 'done\n');
    git(t.remoteClone, 'add', 'feature.txt');
    git(t.remoteClone, '-c', 'user.name=agent', '-c', 'user.email=agent@example.com', 'commit', '-q', '-m', 'feature');
    const remoteHead = git(t.remoteClone, 'rev-parse', 'HEAD');
    const archived = await h.api('POST', `/v1/tasks/${t.taskId}/archive`, {});
    const job = await waitForJob(h, archived.body.operationId);
    expect(job.report.worktrees).toEqual([{ repositoryId: t.repoId, worktreePath: t.remoteClone, outcome: 'removed' }]);
    expect(job.report.processesStopped).toBe(1);
    expect(processAlive(pid)).toBe(false);
    expect(existsSync(t.remoteFolder)).toBe(false);
    // The agent's commit is on the host, on the task branch, as a worktree's would be.
    expect(commitOf(t.repo, taskBranchName(t.taskId))).toBe(remoteHead);
    expect((await rowsOf(t.first.taskEnvironmentId)).map((r: any) => r.status)).toEqual(['deleted']);
  });

  it('a remote branch that cannot come back to the host (diverged) keeps the clone and waits for an operator', async () => {
    const t = await sshTask();
    const commit = (dir: string, file: string) => {
      writeFileSync(path.join(dir, file), `${file}\n`);
      git(dir, 'add', file);
      git(dir, 'commit', '-q', '-m', file);
    };
    commit(t.remoteClone, 'remote.txt');
    // The host's task branch moved elsewhere meanwhile: neither contains the other.
    git(t.repo, 'branch', taskBranchName(t.taskId), 'main');
    const other = path.join(h.scratch, `other-${t.name}`);
    git(t.repo, 'worktree', 'add', '-q', other, taskBranchName(t.taskId));
    commit(other, 'host.txt');
    git(t.repo, 'worktree', 'remove', other);
    const hostHead = commitOf(t.repo, taskBranchName(t.taskId));
    const before = fingerprint(t.remoteClone);
    const archived = await h.api('POST', `/v1/tasks/${t.taskId}/archive`, {});
    const job = await waitForJob(h, archived.body.operationId, ['needs_operator']);
    expect(job.lastError).toBe('remote_branch_not_brought_back');
    expect(fingerprint(t.remoteClone)).toBe(before);
    expect(commitOf(t.repo, taskBranchName(t.taskId))).toBe(hostHead);
  });

  it("a delete stops the task's agents on the target before it removes anything, and removes the task's run folder there", async () => {
    for (const dirty of [false, true]) {
      const t = await sshTask();
      const second = await sshLaunch(t.taskId);
      expect(second.status, JSON.stringify(second.body)).toBe(201);
      const pids = [await pidOf(h, t.first.sessionId), await pidOf(h, second.body.sessionId)];
      const runs = path.join(ssh.workspaceRoot, '.task-workspaces', 'runs', t.taskId);
      expect(existsSync(runs)).toBe(true);
      if (dirty) writeFileSync(path.join(t.remoteClone, 'draft.txt'), 'unsaved\n');
      const deleted = await h.api(
        'DELETE',
        `/v1/tasks/${t.taskId}${dirty ? '?discardChanges=true' : ''}`,
        undefined,
        OPERATOR_TOKEN,
      );
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
      const job = await waitForJob(h, deleted.body.operationId);
      expect(job.report.processesStopped).toBe(2);
      for (const pid of pids) expect(processAlive(pid)).toBe(false);
      expect(existsSync(t.remoteFolder)).toBe(false);
      expect(existsSync(runs)).toBe(false);
    }
  });

  it('archive keeps a dirty remote clone; a consented delete saves its work on the host and removes it', async () => {
    const t = await sshTask();
    writeFileSync(path.join(t.remoteClone, 'draft.txt'), 'unsaved\n');
    const archived = await h.api('POST', `/v1/tasks/${t.taskId}/archive`, {});
    const job = await waitForJob(h, archived.body.operationId);
    expect(job.report.worktrees).toEqual([
      { repositoryId: t.repoId, worktreePath: t.remoteClone, outcome: 'kept_dirty' },
    ]);
    expect(readFileSync(path.join(t.remoteClone, 'draft.txt'), 'utf8')).toBe('unsaved\n');

    const refused = await h.api('DELETE', `/v1/tasks/${t.taskId}`, undefined, OPERATOR_TOKEN);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(existsSync(path.join(t.remoteClone, 'draft.txt'))).toBe(true);
    const deleted = await h.api('DELETE', `/v1/tasks/${t.taskId}?discardChanges=true`, undefined, OPERATOR_TOKEN);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    const done = await waitForJob(h, deleted.body.operationId);
    const entry = done.report.worktrees[0];
    expect(entry).toMatchObject({
      repositoryId: t.repoId,
      outcome: 'saved_and_removed',
      savedRef: `refs/task-workspaces/saved/${t.taskId}/${t.repoId}`,
    });
    expect(existsSync(t.remoteFolder)).toBe(false);
    expect(git(t.repo, 'show', `${entry.savedCommit}:draft.txt`)).toBe('unsaved');
    expect((await h.api('GET', `/v1/tasks/${t.taskId}`)).status).toBe(404);
  });

  it('a consented delete saves a retained host worktree and an SSH clone of one repository on refs of their own: neither save displaces the other', async () => {
    const t = await sshTask('worktree');
    writeFileSync(path.join(t.hostWorktree, 'host-draft.txt'), 'kept on the host\n');
    const toSsh = await sshLaunch(t.taskId);
    expect(toSsh.status, JSON.stringify(toSsh.body)).toBe(201);
    writeFileSync(path.join(t.remoteClone, 'remote-draft.txt'), 'kept on the target\n');
    const deleted = await h.api('DELETE', `/v1/tasks/${t.taskId}?discardChanges=true`, undefined, OPERATOR_TOKEN);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    const done = await waitForJob(h, deleted.body.operationId);
    const saves = done.report.worktrees.filter((w: any) => w.outcome === 'saved_and_removed');
    expect(saves).toHaveLength(2);
    expect(new Set(saves.map((w: any) => w.savedRef)).size).toBe(2);
    // Each save is on its ref, with its own files.
    const onRefs = git(
      t.repo,
      'for-each-ref',
      '--format=%(objectname) %(refname)',
      `refs/task-workspaces/saved/${t.taskId}/`,
    )
      .split('\n')
      .map((line) => line.split(' '));
    for (const w of saves) expect(onRefs).toContainEqual([w.savedCommit, w.savedRef]);
    const files = saves.map((w: any) => git(t.repo, 'ls-tree', '--name-only', w.savedCommit));
    expect(files.join('\n')).toContain('host-draft.txt');
    expect(files.join('\n')).toContain('remote-draft.txt');
  });

  it('an idle ssh task is released with its work brought home and saved, and its next launch restores it in a new clone, its index and ignored files as they were [R6.9, R6.10]', async () => {
    const t = await sshTask('ssh', WORK_REPO_FILES);
    expect((await h.api('POST', `/v1/sessions/${t.first.sessionId}/stop`)).status).toBe(200);
    // A commit, then uncommitted work of every kind on the target: staged, unstaged, untracked, ignored.
    writeFileSync(path.join(t.remoteClone, 'feature.txt'), 'committed on the target\n');
    git(t.remoteClone, 'add', 'feature.txt');
    git(t.remoteClone, '-c', 'user.name=agent', '-c', 'user.email=agent@example.com', 'commit', '-q', '-m', 'feature');
    const remoteHead = git(t.remoteClone, 'rev-parse', 'HEAD');
    makeWork(t.remoteClone);
    const before = workOf(t.remoteClone);
    expect(statusOf(t.remoteClone)).toEqual(WORK_STATUS);

    // Only this task is a candidate: every other task of the file is pinned first.
    const others = (await h.pool.query('SELECT id FROM tasks WHERE id <> $1 AND archived_at IS NULL', [t.taskId])).rows;
    for (const { id } of others) expect((await h.api('POST', `/v1/tasks/${id}/pin`)).status).toBe(200);
    const res = await h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1 }, OPERATOR_TOKEN);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.released.map((r: any) => r.taskId)).toEqual([t.taskId]);
    const job = await waitForJob(h, res.body.released[0].operationId);
    expect(job.state).toBe('succeeded');
    expect(existsSync(t.remoteFolder)).toBe(false);
    // The commit came home on the task branch; the uncommitted work on a release ref of the host repository.
    expect(commitOf(t.repo, taskBranchName(t.taskId))).toBe(remoteHead);
    const saved = (await h.api('GET', `/v1/repositories/${t.repoId}/saved-work`)).body.items.filter(
      (i: any) => i.taskId === t.taskId,
    );
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatchObject({
      trigger: 'idle_release',
      restore: null,
      restoredAt: null,
      leftOut: [{ path: 'node_modules/', reason: 'rebuildable' }],
    });
    expect(git(t.repo, 'show', `${saved[0].ref}:README.md`)).toBe('# idle\nedited, not staged');
    expect(git(t.repo, 'show', `${saved[0].ref}:.env`)).toBe('SECRET_OF_MINE=1');

    const again = await sshLaunch(t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(workOf(t.remoteClone)).toBe(before);
    // The index as it was: staged stays staged, the added file added; the ignored file back, still ignored.
    expect(statusOf(t.remoteClone)).toEqual(WORK_STATUS);
    expect(git(t.remoteClone, 'show', ':src/added.txt')).toBe('added, staged');
    expect(git(t.remoteClone, 'check-ignore', '.env')).toBe('.env');
    expect(existsSync(path.join(t.remoteClone, 'node_modules'))).toBe(false);
    expect(git(t.remoteClone, 'rev-parse', 'HEAD')).toBe(remoteHead);
    expect((await h.api('GET', `/v1/sessions/${again.body.sessionId}`)).body.restore).toBe('applied');
    const restored = (await h.api('GET', `/v1/repositories/${t.repoId}/saved-work`)).body.items.find(
      (i: any) => i.ref === saved[0].ref,
    );
    expect(restored.restore).toBe('applied');
    expect(Date.parse(restored.restoredAt)).toBeGreaterThan(0);
  });
});

/** A remote agent's end, as the worker's periodic check would see it (asked now). */
async function remoteAgentEnded(executionId: string): Promise<void> {
  await waitUntil(async () => {
    await recoverAgents({ pool: h.pool, config: h.config, logger: pino({ level: 'silent' }) }, h.config.hostId);
    return (
      (await h.pool.query('SELECT status FROM executions WHERE id = $1', [executionId])).rows[0].status !== 'running'
    );
  }, 'the remote agent to be seen ended');
}

describe('a new clone made ready on the target (copyFiles, setup)', () => {
  /** A repository whose checkout holds local files: `.env`, a nested config, a link to /etc, a committed link its checkout replaced by a file. */
  async function preparedSshRepo(name: string, settings: Record<string, unknown>) {
    const dir = makeRepo(h.scratch, name, {
      files: { 'README.md': '# r\n', 'version.txt': 'v1\n', '.gitignore': '.env\n.setup-runs\n' },
    });
    const outside = path.join(h.scratch, `${name}-outside`);
    mkdirSync(outside);
    symlinkSync(path.join(outside, 'written'), path.join(dir, 'local.json'));
    git(dir, 'add', 'local.json');
    git(dir, 'commit', '-q', '-m', 'a committed link');
    // The checkout's own copy is a file now (not committed): the clone still has the link.
    rmSync(path.join(dir, 'local.json'));
    writeFileSync(path.join(dir, 'local.json'), '{}\n');
    writeFileSync(path.join(dir, '.env'), 'SECRET=from-checkout\n', { mode: 0o600 });
    chmodSync(path.join(dir, '.env'), 0o600);
    mkdirSync(path.join(dir, 'config'));
    writeFileSync(path.join(dir, 'config/local.dev.json'), '{"dev":true}\n');
    symlinkSync('/etc/passwd', path.join(dir, '.env.local'));
    const res = await h.api('POST', '/v1/repositories', { name, path: dir, ...settings }, OPERATOR_TOKEN);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return { dir, id: res.body.id as string, outside };
  }

  it('copies the files into the clone (never through a link, never over one), runs the setup there before the agent, with its log; an attach runs nothing', async () => {
    const repo = await preparedSshRepo('ssh-ready', {
      copyFiles: ['.env', 'config/local.*.json', '.env.local', 'local.json', 'version.txt'],
      setup: [
        'sh',
        '-c',
        'echo setting up in $(pwd) as $TWS_TASK_ID; echo ran >> .setup-runs; echo made > setup-made.txt',
      ],
    });
    const taskId = await createTask(h, [repo.id]);
    const res = await sshLaunch(taskId, { command: ['sh', '-c', 'cat setup-made.txt .env; echo agent-done'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const clone = path.join(ssh.workspaceRoot, taskDirName(taskId), 'ssh-ready');
    expect(res.body.setup).toMatchObject({ status: 'succeeded', exitCode: 0, repositoryId: repo.id });
    expect(res.body.copied.files.sort()).toEqual(['.env', 'config/local.dev.json']);
    expect(res.body.copied.skipped).toEqual(
      expect.arrayContaining([
        { path: '.env.local', reason: 'symlink' },
        { path: 'local.json', reason: 'symlink' },
        { path: 'version.txt', reason: 'exists' },
      ]),
    );
    expect(res.body.copied.skipped).toHaveLength(3);
    // In the clone with its mode; nothing written through the clone's link, nothing over a committed file.
    expect(readFileSync(path.join(clone, '.env'), 'utf8')).toBe('SECRET=from-checkout\n');
    expect(statSync(path.join(clone, '.env')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(clone, 'config/local.dev.json'), 'utf8')).toBe('{"dev":true}\n');
    expect(existsSync(path.join(repo.outside, 'written'))).toBe(false);
    expect(readFileSync(path.join(clone, 'version.txt'), 'utf8')).toBe('v1\n');
    // The agent started after the setup, in what it made.
    const out = await agentOutputUntil(h, res.body.executionId, 'agent-done');
    expect(out).toContain('made');
    expect(out).toContain('SECRET=from-checkout');
    // Its log is on the target, outside the task folder, read through the API.
    const log = await h.api('GET', `/v1/sessions/${res.body.sessionId}/logs?source=setup`);
    expect(log.status).toBe(200);
    expect(String(log.body)).toContain(`setting up in ${clone} as ${taskId}`);
    const row = (
      await h.pool.query('SELECT log_path, ssh_target_id FROM workspace_preparations WHERE session_id = $1', [
        res.body.sessionId,
      ])
    ).rows[0];
    expect(row.ssh_target_id).toBe(targetId);
    expect(row.log_path.startsWith(path.join(ssh.workspaceRoot, '.task-workspaces', 'runs') + '/')).toBe(true);
    expect(existsSync(row.log_path)).toBe(true);
    const view = await h.api('GET', `/v1/sessions/${res.body.sessionId}`);
    expect(view.body.preparation.setup).toMatchObject({ status: 'succeeded', exitCode: 0 });

    // An attach runs nothing and copies nothing [R1.2].
    writeFileSync(path.join(clone, '.env'), 'EDITED=1\n');
    const attached = await sshLaunch(taskId, { command: ['true'] });
    expect(attached.status, JSON.stringify(attached.body)).toBe(201);
    expect(attached.body).toMatchObject({ role: 'attached', setup: null, copied: null });
    await remoteAgentEnded(attached.body.executionId);
    expect(readFileSync(path.join(clone, '.setup-runs'), 'utf8')).toBe('ran\n');
    expect(readFileSync(path.join(clone, '.env'), 'utf8')).toBe('EDITED=1\n');
  });

  it('a failing setup with refuse undoes the launch on the target: no clone, no rows', async () => {
    const repo = await preparedSshRepo('ssh-refuses', {
      copyFiles: ['.env'],
      setup: ['sh', '-c', 'echo refusing; exit 4'],
      setupFailure: 'refuse',
    });
    const taskId = await createTask(h, [repo.id]);
    const rows = await rowCounts(h.pool);
    const refused = await sshLaunch(taskId, { command: ['true'] });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expectSafeError(refused.body, 'workspace_setup_failed', [repo.dir, ssh.workspaceRoot]);
    expect(refused.body.error).toMatchObject({ repositoryId: repo.id, status: 'failed', exitCode: 4 });
    expect(existsSync(path.join(ssh.workspaceRoot, taskDirName(taskId)))).toBe(false);
    const after = await rowCounts(h.pool);
    expect(after.environment_repos).toBe(rows.environment_repos);
    expect(after.executions).toBe(rows.executions);
  });

  it('after an idle release the setup and the copies run again in the new clone, then the saved work is restored over them', async () => {
    const repo = await preparedSshRepo('ssh-released', {
      copyFiles: ['.env'],
      setup: ['sh', '-c', 'echo from-setup > version.txt; echo ran >> .setup-runs'],
    });
    const taskId = await createTask(h, [repo.id]);
    const first = await sshLaunch(taskId, {
      command: ['sh', '-c', 'echo from-agent > version.txt; echo AGENT=1 > .env; echo notes > notes.txt'],
    });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    await remoteAgentEnded(first.body.executionId);
    const others = (await h.pool.query('SELECT id FROM tasks WHERE id <> $1 AND archived_at IS NULL', [taskId])).rows;
    for (const { id } of others) expect((await h.api('POST', `/v1/tasks/${id}/pin`)).status).toBe(200);
    const job = await releaseIdleTask(h, taskId);
    expect(job.state).toBe('succeeded');
    const again = await sshLaunch(taskId, { command: ['true'] });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.setup).toMatchObject({ status: 'succeeded' });
    expect(again.body.copied.files).toEqual(['.env']);
    const clone = path.join(ssh.workspaceRoot, taskDirName(taskId), 'ssh-released');
    // The agent's work won over what the setup and the copy wrote.
    expect(readFileSync(path.join(clone, 'version.txt'), 'utf8')).toBe('from-agent\n');
    expect(readFileSync(path.join(clone, '.env'), 'utf8')).toBe('AGENT=1\n');
    expect(readFileSync(path.join(clone, 'notes.txt'), 'utf8')).toBe('notes\n');
    expect(readFileSync(path.join(clone, '.setup-runs'), 'utf8')).toBe('ran\n');
    expect((await h.api('GET', `/v1/sessions/${again.body.sessionId}`)).body.restore).toBe('applied');
  });
});

describe('finishing an ssh task [R8.7]', () => {
  it("its clone's branch is brought home before the merge; uncommitted work on the target refuses, and is never committed from the host", async () => {
    const t = await sshTask();
    writeFileSync(path.join(t.remoteClone, 'feature.txt'), 'done on the target\n');
    git(t.remoteClone, 'add', 'feature.txt');
    git(t.remoteClone, '-c', 'user.name=agent', '-c', 'user.email=agent@example.com', 'commit', '-q', '-m', 'feature');
    const remoteHead = git(t.remoteClone, 'rev-parse', 'HEAD');
    writeFileSync(path.join(t.remoteClone, 'draft.txt'), 'not committed\n');
    const merge = (body: Record<string, unknown>) =>
      h.api('POST', `/v1/tasks/${t.taskId}/merge`, { strategy: 'squash', stopAgents: true, ...body });
    const dirty = await merge({});
    expect(dirty.status).toBe(409);
    expect(dirty.body.error).toMatchObject({ code: 'task_uncommitted_changes', repositoryIds: [t.repoId] });
    const notHere = await merge({ commitUncommitted: true });
    expect(notHere.status).toBe(409);
    expect(notHere.body.error).toMatchObject({
      code: 'task_uncommitted_changes',
      reason: 'commit_on_target_unsupported',
    });
    rmSync(path.join(t.remoteClone, 'draft.txt'));
    const before = commitOf(t.repo, 'main');
    const merged = await merge({});
    expect(merged.status, JSON.stringify(merged.body)).toBe(202);
    await waitUntil(
      async () => (await h.api('GET', `/v1/merges/${merged.body.operationId}`)).body.state === 'merged',
      'the merge',
    );
    expect(commitOf(t.repo, taskBranchName(t.taskId))).toBe(remoteHead); // brought home
    expect(git(t.repo, 'rev-parse', 'main^')).toBe(before);
    expect(readFileSync(path.join(t.repo, 'feature.txt'), 'utf8')).toBe('done on the target\n');
    expect(git(t.remoteClone, 'rev-parse', 'HEAD')).toBe(remoteHead); // the clone is as it was
    const rebase = await h.api('POST', `/v1/tasks/${t.taskId}/rebase`, {});
    expect(rebase.status).toBe(409);
    expect(rebase.body.error).toMatchObject({
      code: 'workspace_reuse_unsupported',
      reason: 'rebase_on_target_unsupported',
    });
  });
});

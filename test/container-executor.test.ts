/**
 * The container executor against a real Podman (its Docker Engine API) and the image built here:
 * agents run in one container per task environment, as the task's uid, without capabilities, with
 * the task's limits and its network policy; sessions share it; its cleanup removes it; a refusal
 * leaves nothing behind; the orphan sweep removes only containers proven ours and unrecorded.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  containerEngineSocket,
  containerSettings,
  engineForTests,
  hostContainers,
  removeHostContainers,
  TEST_IMAGE,
} from './support/container-engine';
import { archive, deleteTask, releaseIdleTask, waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import {
  agentEnded,
  agentOutputUntil,
  createTask,
  expectSafeError,
  launch,
  registerRepo,
  waitUntil,
} from './support/scenario';
import { git, listDir, makeRepo, rowCounts } from './support/world';
import { finish } from './support/finishing';
import { executionGroup } from '../domain/limits';

const { harness, cleanups } = harnessesPerTest();
let h: Harness;
let socket: string;

beforeAll(async () => {
  socket = await containerEngineSocket();
  h = await harness({ containers: containerSettings(socket), agentNetwork: 'none', orphanGraceMs: 0 });
  cleanups.push(() => removeHostContainers(h.config.hostId));
}, 120_000);

async function containerTask(name: string) {
  const repo = makeRepo(h.scratch, name);
  const repositoryId = await registerRepo(h, repo, name);
  const taskId = await createTask(h, [repositoryId]);
  return { repo, taskId, repositoryId };
}

const launchIn = (taskId: string, command: string[], more: Record<string, unknown> = {}) =>
  launch(h, taskId, { executorType: 'container', command, ...more });

const containerRow = async (environmentId: string) =>
  (await h.pool.query('SELECT * FROM environment_containers WHERE environment_id = $1', [environmentId])).rows[0];

/** The container as the engine holds it, or null once it is gone. */
async function engineContainer(id: string) {
  const engine = await engineForTests();
  return engine
    .getContainer(id)
    .inspect()
    .catch((err: { statusCode?: number }) => {
      if (err.statusCode === 404) return null;
      throw err;
    });
}

/** The pids in a container's memory control group, read on the host. */
function containerPids(initPid: number): number[] {
  const line = readFileSync(`/proc/${initPid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => /^\d+:memory:/.test(l))!;
  const group = line.split(':')[2]!;
  return readFileSync(path.join('/sys/fs/cgroup/memory', group, 'cgroup.procs'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map(Number);
}

const worktreeOf = async (environmentId: string) =>
  (
    await h.pool.query("SELECT worktree_path FROM environment_repos WHERE environment_id = $1 AND status = 'active'", [
      environmentId,
    ])
  ).rows[0]!.worktree_path as string;

describe('the container executor', () => {
  it('runs the agent in its task container from the image, as the task uid, without capabilities, where git works', async () => {
    const { taskId } = await containerTask('ctr-launch');
    const res = await launchIn(taskId, [
      'sh',
      '-c',
      'echo uid=$(id -u); grep -E "CapEff|NoNewPrivs" /proc/self/status; head -1 /etc/os-release; git status --porcelain --branch | head -1; echo work > made.txt; git add made.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm agent && echo committed; echo ready; sleep 600',
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await agentOutputUntil(h, res.body.executionId, 'ready');
    const uid = (await h.pool.query('SELECT uid FROM agent_uids')).rows.map((r) => String(r.uid));
    expect(uid).toContain(/uid=(\d+)/.exec(out)![1]);
    expect(out).toContain('CapEff:\t0000000000000000');
    expect(out).toContain('NoNewPrivs:\t1');
    expect(out).toContain('Debian GNU/Linux 12 (bookworm)');
    expect(out).toContain('## tws/');
    expect(out).toContain('committed');

    // The container is recorded, running from the image, labelled ours, as the same uid, with no capability.
    const row = await containerRow(res.body.taskEnvironmentId);
    const info = (await engineContainer(row.container_id))!;
    expect(info.State.Running).toBe(true);
    expect(info.Config.Image).toContain('tws-agent:bookworm');
    expect(info.Config.User).toBe(`${/uid=(\d+)/.exec(out)![1]}:${/uid=(\d+)/.exec(out)![1]}`);
    expect(info.HostConfig.CapDrop?.length ?? 0).toBeGreaterThan(0);
    expect(info.HostConfig.NetworkMode).toBe('none');
    expect(info.Config.Labels?.['io.task-workspaces.environment']).toBe(res.body.taskEnvironmentId);
    // The agent is a process of the container (its control group), and its supervisor the host's.
    const pid = (await h.pool.query('SELECT pid FROM executions WHERE id = $1', [res.body.executionId])).rows[0].pid;
    const members = containerPids(info.State.Pid);
    expect(members.length).toBeGreaterThan(1);
    expect(members).not.toContain(pid);
    // The agent's commit is on the task's branch, seen from outside once a git status brought its
    // task store's objects home (as for the sandbox's agents).
    const status = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    const wt = await worktreeOf(res.body.taskEnvironmentId);
    expect(git(wt, 'log', '-1', '--format=%s')).toBe('agent');
  });

  it("a container agent's commits merge into the base once brought home; the worktree is shared with the host [R8.7]", async () => {
    const { repo, taskId, repositoryId } = await containerTask('ctr-merge');
    const res = await launchIn(taskId, [
      'sh',
      '-c',
      'echo from the container > feature.txt; git add feature.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm feature && echo committed',
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await agentEnded(h, res.body.sessionId);
    const before = git(repo, 'rev-parse', 'main');
    const merged = await finish(h, 'POST', `/v1/tasks/${taskId}/merge`, { strategy: 'rebase' });
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    expect(merged.body.repositories).toEqual([
      { repositoryId, baseBranch: 'main', before, after: git(repo, 'rev-parse', 'main') },
    ]);
    expect(git(repo, 'log', '-1', '--format=%an %s', 'main')).toBe('agent feature');
    expect(readFileSync(path.join(repo, 'feature.txt'), 'utf8')).toBe('from the container\n');
  });

  it('a second session shares the container; an agent exit and its log are recorded', async () => {
    const { taskId } = await containerTask('ctr-share');
    const first = await launchIn(taskId, ['sh', '-c', 'echo first; sleep 600']);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const second = await launchIn(taskId, ['sh', '-c', 'echo to the log; ls /proc | grep -c "^[0-9]"; exit 3']);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body.taskEnvironmentId).toBe(first.body.taskEnvironmentId);
    expect(second.body.role).toBe('attached');
    const ended = await agentEnded(h, second.body.sessionId);
    expect(ended.execution.exitCode).toBe(3);
    const logs = await h.api('GET', `/v1/sessions/${second.body.sessionId}/logs`);
    expect(logs.status).toBe(200);
    expect(JSON.stringify(logs.body)).toContain('to the log');
    // One container for both: one row, one container of the environment on the engine.
    const ours = (await hostContainers(h.config.hostId)).filter(
      (c) => c.Labels['io.task-workspaces.environment'] === first.body.taskEnvironmentId,
    );
    expect(ours).toHaveLength(1);
  });

  it('a command the image does not have ends the agent with 127, said in its log', async () => {
    const { taskId } = await containerTask('ctr-missing-command');
    const res = await launchIn(taskId, ['no-such-tool', '--flag']);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const ended = await agentEnded(h, res.body.sessionId);
    expect(ended.execution.exitCode).toBe(127);
    const out = await agentOutputUntil(h, res.body.executionId, 'not found');
    expect(out).toContain('no-such-tool');
  });

  it('two launches of a new task at once make one container', async () => {
    const { taskId } = await containerTask('ctr-race');
    const [a, b] = await Promise.all([launchIn(taskId, ['sleep', '600']), launchIn(taskId, ['sleep', '600'])]);
    const ok = [a, b].filter((r) => r.status === 201);
    expect(ok.length, JSON.stringify([a.body, b.body])).toBeGreaterThanOrEqual(1);
    // The other waited for the first's workspace (workspace_preparing) or attached to it.
    for (const r of [a, b]) if (r.status !== 201) expectSafeError(r.body, 'workspace_preparing');
    if (ok.length === 1) {
      const again = await launchIn(taskId, ['sleep', '600']);
      expect(again.status, JSON.stringify(again.body)).toBe(201);
    }
    const env = ok[0]!.body.taskEnvironmentId;
    const ours = (await hostContainers(h.config.hostId)).filter(
      (c) => c.Labels['io.task-workspaces.environment'] === env,
    );
    expect(ours).toHaveLength(1);
    expect(
      (
        await h.pool.query(
          'SELECT count(*)::int AS n FROM executions e JOIN sessions s ON s.id = e.session_id WHERE s.task_id = $1 AND e.status = $2',
          [taskId, 'running'],
        )
      ).rows[0].n,
    ).toBe(2);
  });

  it('four sessions attaching at once to a ready task all start, in its one container', async () => {
    const { taskId } = await containerTask('ctr-attach-race');
    const first = await launchIn(taskId, ['sleep', '600']);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    // Each start makes sure of the container while the others' admissions wait on the task's lock.
    const all = await Promise.all([1, 2, 3, 4].map(() => launchIn(taskId, ['sleep', '600'])));
    for (const r of all) expect(r.status, JSON.stringify(r.body)).toBe(201);
    const env = first.body.taskEnvironmentId;
    const ours = (await hostContainers(h.config.hostId)).filter(
      (c) => c.Labels['io.task-workspaces.environment'] === env,
    );
    expect(ours).toHaveLength(1);
    const info = (await engineContainer(ours[0]!.Id))!;
    // Five agents (and no more) in it: each a process of the container's groups, with the
    // `nsenter` that entered it and waits for it (it joined the groups first): 1 + 5 × 2, once
    // each agent's shell has read its variables (a start answers before its `cat` has ended).
    const count = async () => containerPids(info.State.Pid).length;
    await waitUntil(async () => (await count()) === 11, "1 + 5 × 2 processes in the container's groups", 15_000, count);
  });

  it('holds the agent to the task limits inside the container', async () => {
    const { taskId } = await containerTask('ctr-limits');
    const res = await launchIn(
      taskId,
      [
        'sh',
        '-c',
        '(n=0; while [ $n -lt 60 ]; do sleep 300 & n=$((n+1)); done; echo all-started) 2>/dev/null; echo "forks-ended=$?"; echo ready; exec sleep 600',
      ],
      { limits: { pids: 24, memoryBytes: 256 * 1024 * 1024 } },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await agentOutputUntil(h, res.body.executionId, 'ready');
    expect(out).not.toContain('all-started');
    expect(out).toMatch(/forks-ended=[1-9]/);
    const row = await containerRow(res.body.taskEnvironmentId);
    const info = (await engineContainer(row.container_id))!;
    expect(info.HostConfig.PidsLimit).toBe(24);
    expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024);
    // Every process of the agent is in the container's groups, bounded there.
    expect(containerPids(info.State.Pid).length).toBeLessThanOrEqual(24);
  });

  it('the agent reaches no service port, no service file, no host process, and cannot write the image', async () => {
    const { taskId } = await containerTask('ctr-boundary');
    const port = new URL(h.baseUrl).port;
    const res = await launchIn(taskId, [
      'sh',
      '-c',
      [
        `git ls-remote http://127.0.0.1:${port}/x 2>&1 | head -1`,
        'echo net=$(grep -c : /proc/net/dev)',
        `ls ${h.config.dataDir} 2>&1 | head -1`,
        `ls ${h.config.workspaceRoot} 2>&1 | head -3`,
        'echo procs=$(ls /proc | grep -c "^[0-9]")',
        'touch /usr/bin/escape 2>&1 | head -1',
        'newgrp 2>&1 | head -1',
        'echo end',
      ].join('; '),
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await agentOutputUntil(h, res.body.executionId, 'end');
    expect(out).toMatch(/Failed to connect|Couldn't connect|Connection refused/);
    expect(out).toContain('net=1'); // only its own loopback
    // Of the service's folders only the way to what is bound in: the data folder shows its log
    // folder (the container's run folder is in it), the workspace root this task's folder alone.
    const lines = out.split('\n');
    expect(lines[lines.findIndex((l) => l.startsWith('net=')) + 1]).toBe('logs');
    expect(lines.filter((l) => /^task-/.test(l))).toHaveLength(1);
    expect(Number(/procs=(\d+)/.exec(out)![1])).toBeLessThan(15);
    expect(out).toMatch(/Read-only file system|Permission denied/);
    expect(existsSync('/usr/bin/escape')).toBe(false);
    // newgrp is setuid root in the image: with no_new_privs it cannot raise anything.
    expect(out).not.toMatch(/^uid=0/m);
  });

  it('an agent in the container, as an attacker, gets no namespace, mount, ptrace of its neighbour or raw socket: at least what the host sandbox holds it to', async () => {
    const { taskId } = await containerTask('ctr-attacker');
    // A neighbour: another session's agent of the same environment, in the same container, as the same uid.
    const neighbour = await launchIn(taskId, ['sleep', '6001']);
    expect(neighbour.status, JSON.stringify(neighbour.body)).toBe(201);
    const worktree = await worktreeOf(neighbour.body.taskEnvironmentId);
    // Each attempt by the system call itself (perl's syscall: x86-64 numbers), and unshare(1) as a person types it.
    writeFileSync(
      path.join(worktree, 'attack.pl'),
      [
        'use strict; use Socket; my %r;',
        "$r{unshare_r} = system('unshare -r true 2>/dev/null') == 0 ? 'yes' : 'no';",
        "$r{unshare_m} = system('unshare -m true 2>/dev/null') == 0 ? 'yes' : 'no';",
        "$r{unshare_net} = system('unshare -n true 2>/dev/null') == 0 ? 'yes' : 'no';",
        "mkdir '/tmp/m'; my ($src, $dst, $fs) = ('none', '/tmp/m', 'tmpfs');",
        "$r{mount} = syscall(165, $src, $dst, $fs, 0, 0) == 0 ? 'yes' : 'no';",
        "my $pid = `pgrep -o -f 'sleep 6001'`; chomp $pid; $r{neighbour} = $pid ? 'seen' : 'none';",
        "$r{ptrace} = ($pid && syscall(101, 16, $pid + 0, 0, 0) == 0) ? 'yes' : 'no';",
        "$r{raw_socket} = socket(my $s, PF_INET, SOCK_RAW, 1) ? 'yes' : 'no';",
        "$r{packet_socket} = socket(my $p, 17, SOCK_RAW, 0) ? 'yes' : 'no';",
        // Last: a user namespace by the call itself would leave this process in it.
        "$r{unshare_user} = syscall(272, 0x10000000) == 0 ? 'yes' : 'no';",
        'print join(" ", map { "$_=$r{$_}" } sort keys %r), "\n";',
      ].join('\n'),
    );
    const attacker = await launchIn(taskId, [
      'sh',
      '-c',
      'perl attack.pl; git status --short >/dev/null && echo git=works; echo end',
    ]);
    expect(attacker.status, JSON.stringify(attacker.body)).toBe(201);
    const out = await agentOutputUntil(h, attacker.body.executionId, 'end');
    const seen = Object.fromEntries((/mount=.*$/m.exec(out)?.[0] ?? out).split(' ').map((kv) => kv.split('=')));
    expect(seen, out).toEqual({
      mount: 'no',
      neighbour: 'seen',
      packet_socket: 'no',
      ptrace: 'no',
      raw_socket: 'no',
      unshare_m: 'no',
      unshare_net: 'no',
      unshare_r: 'no',
      unshare_user: 'no',
    });
    // Confined, it still works: git (threads, children) runs.
    expect(out).toContain('git=works');
  });

  it('a missing image is refused 409 and an engine that does not answer 503; nothing is made', async () => {
    const { taskId } = await containerTask('ctr-refused');
    const before = { rows: await rowCounts(h.pool), root: listDir(h.config.workspaceRoot) };
    const containersBefore = (await hostContainers(h.config.hostId)).length;
    const missing = await launchIn(taskId, ['true'], { agentProfile: 'shell', containerImage: 'tws-agent:absent' });
    // An image the operator does not allow is a 400; one allowed but not built here is the 409.
    expect(missing.status).toBe(400);
    const other = await harness({
      containers: containerSettings(socket, { image: 'tws-agent:absent' }),
      agentNetwork: 'none',
    });
    cleanups.push(() => removeHostContainers(other.config.hostId));
    const repo = makeRepo(other.scratch, 'ctr-absent');
    const otherTask = await createTask(other, [await registerRepo(other, repo, 'ctr-absent')]);
    const absent = await launch(other, otherTask, { executorType: 'container', command: ['true'] });
    expect(absent.status, JSON.stringify(absent.body)).toBe(409);
    expectSafeError(absent.body, 'container_image_missing', [repo]);
    expect(await rowCounts(other.pool)).toMatchObject({ sessions: 0, executions: 0 });

    const down = await harness({
      containers: containerSettings(path.join(h.scratch, 'no-engine.sock')),
      agentNetwork: 'none',
    });
    const downRepo = makeRepo(down.scratch, 'ctr-down');
    const downTask = await createTask(down, [await registerRepo(down, downRepo, 'ctr-down')]);
    const unavailable = await launch(down, downTask, { executorType: 'container', command: ['true'] });
    expect(unavailable.status, JSON.stringify(unavailable.body)).toBe(503);
    expectSafeError(unavailable.body, 'executor_unavailable', [downRepo, 'no-engine.sock']);
    expect(unavailable.body.error.recoverable).toBe(true);
    expect(await rowCounts(down.pool)).toMatchObject({ sessions: 0, executions: 0 });
    expect(listDir(down.config.workspaceRoot)).toEqual([]);

    // Not offered at all: 400, not retryable.
    const off = await harness({});
    const offRepo = makeRepo(off.scratch, 'ctr-off');
    const offTask = await createTask(off, [await registerRepo(off, offRepo, 'ctr-off')]);
    const notOffered = await launch(off, offTask, { executorType: 'container', command: ['true'] });
    expect(notOffered.status).toBe(400);
    expectSafeError(notOffered.body, 'executor_unavailable');
    expect(notOffered.body.error.recoverable).toBe(false);

    expect(await rowCounts(h.pool)).toEqual(before.rows);
    expect(listDir(h.config.workspaceRoot)).toEqual(before.root);
    expect((await hostContainers(h.config.hostId)).length).toBe(containersBefore);
    expect(await hostContainers(other.config.hostId)).toEqual([]);
  });

  it('limits under what the engine can enforce are a 400 naming the minimum; no session, environment or container is made', async () => {
    const { taskId } = await containerTask('ctr-tiny');
    const before = { rows: await rowCounts(h.pool), root: listDir(h.config.workspaceRoot) };
    const containersBefore = (await hostContainers(h.config.hostId)).length;
    // The engine refuses to start a container in 1 byte: this was a 503 as if it did not answer.
    for (const [limits, minimum] of [
      [{ memoryBytes: 1 }, '6291456'],
      [{ memoryBytes: 6 * 1024 * 1024 - 1 }, '6291456'],
      [{ cpus: 0.001 }, '0.01'],
    ] as const) {
      const res = await launchIn(taskId, ['true'], { limits });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expectSafeError(res.body, 'invalid_request');
      expect(res.body.error.message).toContain(`limits.${Object.keys(limits)[0]}`);
      expect(res.body.error.message).toContain(minimum);
    }
    expect(await rowCounts(h.pool)).toEqual(before.rows);
    expect(listDir(h.config.workspaceRoot)).toEqual(before.root);
    expect((await hostContainers(h.config.hostId)).length).toBe(containersBefore);
    // At the minimum the engine starts it.
    const least = await launchIn(taskId, ['sh', '-c', 'echo ready; sleep 600'], { limits: { memoryBytes: 6 << 20 } });
    expect(least.status, JSON.stringify(least.body)).toBe(201);
  });

  it('archive stops the agents and removes the container, keeping dirty work; unarchive and a launch make it again', async () => {
    const { taskId } = await containerTask('ctr-archive');
    const res = await launchIn(taskId, ['sh', '-c', 'echo dirty > uncommitted.txt; echo ready; sleep 600']);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await agentOutputUntil(h, res.body.executionId, 'ready');
    const row = await containerRow(res.body.taskEnvironmentId);
    const wt = await worktreeOf(res.body.taskEnvironmentId);
    const job = await waitForJob(h, (await archive(h, taskId)).operationId);
    expect(job.report.container).toBe('removed');
    expect(await engineContainer(row.container_id)).toBeNull();
    expect(await containerRow(res.body.taskEnvironmentId)).toBeUndefined();
    expect(readFileSync(path.join(wt, 'uncommitted.txt'), 'utf8')).toBe('dirty\n');
    expect((await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body.execution.state).not.toBe('running');
  });

  it('a consented delete saves dirty work, removes the worktree and the container', async () => {
    const { taskId, repositoryId } = await containerTask('ctr-delete');
    const res = await launchIn(taskId, ['sh', '-c', 'echo precious > work.txt; echo ready; sleep 600']);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await agentOutputUntil(h, res.body.executionId, 'ready');
    const row = await containerRow(res.body.taskEnvironmentId);
    const wt = await worktreeOf(res.body.taskEnvironmentId);
    const refused = await deleteTask(h, taskId);
    expect(refused.status).toBe(409);
    const del = await deleteTask(h, taskId, 'discardChanges=true');
    expect(del.status, JSON.stringify(del.body)).toBe(202);
    const job = await waitForJob(h, del.body.operationId);
    expect(job.report.container).toBe('removed');
    const saved = job.report.worktrees.find((w: any) => w.repositoryId === repositoryId);
    expect(saved.outcome).toBe('saved_and_removed');
    expect(existsSync(wt)).toBe(false);
    expect(await engineContainer(row.container_id)).toBeNull();
    const repoPath = (await h.pool.query('SELECT path FROM repositories WHERE id = $1', [repositoryId])).rows[0].path;
    expect(git(repoPath, 'show', `${saved.savedCommit}:work.txt`)).toBe('precious');
  });

  it('moves worktree → container → worktree on the same worktree', async () => {
    const { taskId } = await containerTask('ctr-transition');
    const onHost = await launch(h, taskId, { command: ['sh', '-c', 'echo from-host > host.txt'] });
    expect(onHost.status, JSON.stringify(onHost.body)).toBe(201);
    await agentEnded(h, onHost.body.sessionId);
    const wt = await worktreeOf(onHost.body.taskEnvironmentId);
    const inContainer = await launchIn(taskId, [
      'sh',
      '-c',
      'cat host.txt; pwd; echo from-container > container.txt; echo done',
    ]);
    expect(inContainer.status, JSON.stringify(inContainer.body)).toBe(201);
    expect(inContainer.body.taskEnvironmentId).toBe(onHost.body.taskEnvironmentId);
    const out = await agentOutputUntil(h, inContainer.body.executionId, 'done');
    expect(out).toContain('from-host');
    expect(await worktreeOf(inContainer.body.taskEnvironmentId)).toBe(wt);
    await agentEnded(h, inContainer.body.sessionId);
    const back = await launch(h, taskId, { command: ['sh', '-c', 'cat container.txt'] });
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect(back.body.taskEnvironmentId).toBe(onHost.body.taskEnvironmentId);
    expect(await worktreeOf(back.body.taskEnvironmentId)).toBe(wt);
    expect(readFileSync(path.join(wt, 'container.txt'), 'utf8')).toBe('from-container\n');
  });

  it('an idle release removes the container; the next launch makes it again and restores the work', async () => {
    const { taskId } = await containerTask('ctr-idle');
    const first = await launchIn(taskId, ['sh', '-c', 'echo unsaved > notes.txt']);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    await agentEnded(h, first.body.sessionId);
    const row = await containerRow(first.body.taskEnvironmentId);
    const job = await releaseIdleTask(h, taskId);
    expect(job.report.container).toBe('removed');
    expect(await engineContainer(row.container_id)).toBeNull();
    const again = await launchIn(taskId, ['sh', '-c', 'cat notes.txt; echo done']);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    const out = await agentOutputUntil(h, again.body.executionId, 'done');
    expect(out).toContain('unsaved');
    const made = await containerRow(again.body.taskEnvironmentId);
    expect(made.container_id).not.toBe(row.container_id);
    expect((await engineContainer(made.container_id))!.State.Running).toBe(true);
  });

  it('the orphan sweep removes an unrecorded container of ours and keeps what it cannot prove ours', async () => {
    const engine = await engineForTests();
    const make = (labels: Record<string, string>) =>
      engine
        .createContainer({
          Image: TEST_IMAGE,
          Entrypoint: ['/bin/sleep'],
          Cmd: ['infinity'],
          Labels: labels,
          HostConfig: {
            NetworkMode: 'none',
            Ulimits: [
              { Name: 'nofile', Soft: 1024, Hard: 1024 },
              { Name: 'nproc', Soft: 1024, Hard: 1024 },
            ],
          },
        })
        .then(async (c) => (await c.start(), c.id));
    const orphan = await make({
      'io.task-workspaces.owner': 'task-workspaces',
      'io.task-workspaces.host': h.config.hostId,
      'io.task-workspaces.instance': h.config.instanceId,
      'io.task-workspaces.environment': randomUUID(),
    });
    // Another instance's on this host (the same host label), and one from before instances were labelled.
    const otherInstance = await make({
      'io.task-workspaces.owner': 'task-workspaces',
      'io.task-workspaces.host': h.config.hostId,
      'io.task-workspaces.instance': 'another-instance',
      'io.task-workspaces.environment': randomUUID(),
    });
    const unlabelledInstance = await make({
      'io.task-workspaces.owner': 'task-workspaces',
      'io.task-workspaces.host': h.config.hostId,
      'io.task-workspaces.environment': randomUUID(),
    });
    const foreign = await make({
      'io.task-workspaces.owner': 'task-workspaces',
      'io.task-workspaces.host': `other-${randomUUID()}`,
    });
    const unlabelled = await make({ purpose: 'someone else' });
    cleanups.push(async () => {
      for (const id of [foreign, unlabelled, otherInstance, unlabelledInstance])
        await engine
          .getContainer(id)
          .remove({ force: true })
          .catch(() => undefined);
    });
    // A recorded container of a live task stays.
    const { taskId } = await containerTask('ctr-sweep');
    const live = await launchIn(taskId, ['sleep', '600']);
    expect(live.status, JSON.stringify(live.body)).toBe(201);
    const recorded = (await containerRow(live.body.taskEnvironmentId)).container_id;

    const dry = await h.api('POST', '/v1/orphan-sweep', { dryRun: true }, OPERATOR_TOKEN);
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body.containers.removed).toEqual([orphan.slice(0, 12)]);
    expect(await engineContainer(orphan)).not.toBeNull();
    const swept = await h.api('POST', '/v1/orphan-sweep', {}, OPERATOR_TOKEN);
    expect(swept.body.containers.removed).toEqual([orphan.slice(0, 12)]);
    expect(await engineContainer(orphan)).toBeNull();
    for (const id of [foreign, unlabelled, otherInstance, unlabelledInstance, recorded])
      expect((await engineContainer(id))!.State.Running).toBe(true);
  });

  it("two instances on one host: each sweep keeps the other instance's live containers, each has its own control groups", async () => {
    // A second instance on the same host: the same host id, its own data folder (so its own instance id) and database.
    const other = await harness({
      hostId: h.config.hostId,
      containers: containerSettings(socket),
      agentNetwork: 'none',
      orphanGraceMs: 0,
    });
    expect(other.config.instanceId).not.toBe(h.config.instanceId);
    expect(other.config.limits.cgroupParent).not.toBe(h.config.limits.cgroupParent);
    const mine = await launchIn((await containerTask('ctr-instance-a')).taskId, ['sleep', '600']);
    expect(mine.status, JSON.stringify(mine.body)).toBe(201);
    const otherRepo = makeRepo(other.scratch, 'ctr-instance-b');
    const otherTask = await createTask(other, [await registerRepo(other, otherRepo, 'ctr-instance-b')]);
    const theirs = await launch(other, otherTask, { executorType: 'container', command: ['sleep', '600'] });
    expect(theirs.status, JSON.stringify(theirs.body)).toBe(201);
    const mineId = (await containerRow(mine.body.taskEnvironmentId)).container_id;
    const theirsId = (
      await other.pool.query('SELECT container_id FROM environment_containers WHERE environment_id = $1', [
        theirs.body.taskEnvironmentId,
      ])
    ).rows[0].container_id;
    for (const harnessOf of [h, other]) {
      const swept = await harnessOf.api('POST', '/v1/orphan-sweep', {}, OPERATOR_TOKEN);
      expect(swept.status, JSON.stringify(swept.body)).toBe(200);
      expect(swept.body.containers.removed).toEqual([]);
    }
    for (const id of [mineId, theirsId]) expect((await engineContainer(id))!.State.Running).toBe(true);
    // A host agent of each instance is held in its own instance's control groups, under a folder of its own.
    for (const hh of [h, other]) {
      const repo = makeRepo(hh.scratch, `host-agent-${hh.config.instanceId}`);
      const task = await createTask(hh, [await registerRepo(hh, repo, `host-agent-${hh.config.instanceId}`)]);
      const agent = await launch(hh, task, { command: ['sleep', '600'] });
      expect(agent.status, JSON.stringify(agent.body)).toBe(201);
      const group = path.join(
        '/sys/fs/cgroup/memory',
        executionGroup(hh.config.limits.cgroupParent, task, agent.body.executionId),
      );
      expect(group).toContain(`/task-workspaces/${hh.config.instanceId}/`);
      expect(readFileSync(path.join(group, 'cgroup.procs'), 'utf8').trim()).not.toBe('');
    }
    // Each archive removes its own container only.
    await waitForJob(other, (await archive(other, otherTask)).operationId);
    expect(await engineContainer(theirsId)).toBeNull();
    expect((await engineContainer(mineId))!.State.Running).toBe(true);
  });

  it('GET /v1/hosts and /readyz say whether the host can run containers', async () => {
    await waitUntil(
      async () =>
        (await h.api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN)).body.items.some(
          (x: any) => x.hostId === h.config.hostId && x.containers.available,
        ),
      'the host to report containers',
    );
    const hosts = (await h.api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN)).body.items;
    const mine = hosts.find((x: any) => x.hostId === h.config.hostId);
    expect(mine.containers).toEqual({ available: true, engine: 'podman' });
    expect(mine.executors).toContain('container');
    const ready = await h.api('GET', '/readyz');
    expect(ready.body.containers).toEqual({ available: true, engine: 'podman' });
    const down = await harness({ containers: containerSettings(path.join(h.scratch, 'none.sock')) });
    const notReady = await down.api('GET', '/readyz');
    expect(notReady.body.containers).toEqual({ available: false, engine: null, reason: 'engine_unreachable' });
  });
});

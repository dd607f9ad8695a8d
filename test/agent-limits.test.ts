/**
 * One agent cannot take the host: its processes, its memory (its /tmp counted) and its
 * CPUs are held by control groups of its own, inside its task's, made before it starts. Real
 * control groups (cgroup v1 on these hosts), real tmpfs, real processes: each test fails without
 * its limit.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Config } from '../domain/config';
import { executionGroup, taskGroup } from '../domain/limits';
import { agentLimitsLayout, prepareAgentGroup, sweepAgentGroups } from '../executors/host/agent-limits';
import { run as cli } from '../client/cli/cli';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import { agentOutputUntil, createTask, launch, registerRepo, SLEEPER, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';

const { harness } = harnessesPerTest();

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

/** Limits small enough to reach in a test, and a maximum above them. */
function limitsConfig(extra: Partial<Config['limits']> = {}): Partial<Config> {
  return {
    // Usage read (and quotas checked) often enough to see within a test.
    diskQuotaCheckEveryMs: 300,
    limits: {
      enabled: true,
      defaults: { memoryBytes: 256 * MIB, pids: 64, cpus: 1 },
      maximum: { memoryBytes: GIB, pids: 200, cpus: 2 },
      tmpBytes: 16 * MIB,
      cgroupParent: 'task-workspaces',
      ...extra,
    },
  };
}

async function newTask(h: Harness, name: string): Promise<string> {
  return createTask(h, [await registerRepo(h, makeRepo(h.scratch, name), name)]);
}

/** A file of the execution's group (v1: under the controller's own hierarchy). */
const groupFile = (h: Harness, controller: string, taskId: string, executionId: string, file: string) =>
  readFileSync(
    path.join('/sys/fs/cgroup', controller, executionGroup(h.config.limits.cgroupParent, taskId, executionId), file),
    'utf8',
  ).trim();

const taskGroupFile = (h: Harness, controller: string, taskId: string, file: string) =>
  readFileSync(
    path.join('/sys/fs/cgroup', controller, taskGroup(h.config.limits.cgroupParent, taskId), file),
    'utf8',
  ).trim();

async function metric(h: Harness, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${h.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('processes', () => {
  it("a fork loop stops at the agent's pids limit; the service and another task's agent keep working", async () => {
    const h = await harness(limitsConfig());
    const taskId = await newTask(h, 'forks');
    // Each fork past the limit fails at once (EAGAIN); the loop counts both and says so.
    const loop = [
      'import os, time',
      'started = failed = 0',
      'for _ in range(300):',
      '    try:',
      '        pid = os.fork()',
      '    except OSError:',
      '        failed += 1',
      '        continue',
      '    if pid == 0:',
      '        time.sleep(600)',
      '        os._exit(0)',
      '    started += 1',
      'print(f"forks-tried started={started} failed={failed}", flush=True)',
      'time.sleep(600)',
    ].join('\n');
    const res = await launch(h, taskId, { command: ['python3', '-c', loop], limits: { pids: 40 } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await agentOutputUntil(h, res.body.executionId, 'forks-tried');
    const [, started, failed] = /started=(\d+) failed=(\d+)/.exec(out)!.map(Number);
    expect(started).toBeLessThan(40);
    expect(failed).toBeGreaterThan(250);
    // The group holds at most its limit, and the kernel refused the forks past it.
    const procs = groupFile(h, 'pids', taskId, res.body.executionId, 'cgroup.procs').split('\n').filter(Boolean);
    expect(procs.length).toBeLessThanOrEqual(40);
    expect(procs.length).toBeGreaterThan(30);
    expect(groupFile(h, 'pids', taskId, res.body.executionId, 'pids.max')).toBe('40');
    expect(
      Number(/^max (\d+)$/m.exec(groupFile(h, 'pids', taskId, res.body.executionId, 'pids.events'))?.[1]),
    ).toBeGreaterThan(0);

    // Its use shows in its task's and its session's views, and in the metrics against the maximum.
    let usage: any;
    await waitUntil(
      async () => ((usage = (await h.api('GET', `/v1/tasks/${taskId}`)).body.usage)?.pids ?? 0) > 30,
      'the usage read',
    );
    expect(usage.memoryBytes).toBeGreaterThan(0);
    expect((await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body.usage.pids).toBeGreaterThan(30);
    expect(await metric(h, 'tws_task_pids_usage_ratio_max', `host="${h.config.hostId}"`)).toBeGreaterThan(30 / 200);
    const printed: string[] = [];
    const env = { TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN };
    expect(await cli(['limits', taskId], env, (s) => printed.push(s))).toBe(0);
    expect(printed.join('')).toContain('each agent (by default): memory 256.0 MiB, 64 processes, 1 CPUs');
    expect(printed.join('')).toMatch(/in use now: memory .*, (3\d|40) processes/);

    // The service answers, and another task's agent starts and runs beside it.
    expect((await h.api('GET', '/v1/tasks/' + taskId)).status).toBe(200);
    const other = await newTask(h, 'beside-forks');
    const next = await launch(h, other, { command: ['sh', '-c', 'sleep 1 & wait; echo child-ran; sleep 600'] });
    expect(next.status, JSON.stringify(next.body)).toBe(201);
    await agentOutputUntil(h, next.body.executionId, 'child-ran');
  });
});

describe('memory', () => {
  it('a memory hog is killed at its limit, and its session, its log and the metrics say oom_killed', async () => {
    const h = await harness(limitsConfig());
    const taskId = await newTask(h, 'hog');
    const before = await metric(h, 'tws_agents_ended_by_limit_total', 'outcome="oom_killed"');
    const res = await launch(h, taskId, {
      command: ['python3', '-c', 'import time\nchunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))'],
      limits: { memoryBytes: 64 * MIB },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const sessionId = res.body.sessionId as string;
    let view: any;
    await waitUntil(
      async () => (view = (await h.api('GET', `/v1/sessions/${sessionId}`)).body).state === 'exited',
      'the hog to end',
    );
    expect(view.execution).toMatchObject({ state: 'exited', outcome: 'oom_killed' });
    expect(view.limits).toEqual({ memoryBytes: 64 * MIB, pids: 64, cpus: 1 });
    const row = (await h.pool.query('SELECT outcome, log_path FROM executions WHERE id = $1', [res.body.executionId]))
      .rows[0];
    expect(row.outcome).toBe('oom_killed');
    expect(readFileSync(row.log_path, 'utf8')).toContain('memory limit');
    expect(await metric(h, 'tws_agents_ended_by_limit_total', 'outcome="oom_killed"')).toBe(before + 1);
    // Its group and its task's are gone with it (it was the task's only agent).
    expect(() => taskGroupFile(h, 'memory', taskId, 'memory.limit_in_bytes')).toThrow();
  });

  it('an agent that ends on its own is not called oom_killed', async () => {
    const h = await harness(limitsConfig());
    const taskId = await newTask(h, 'fine');
    const res = await launch(h, taskId, { command: ['sh', '-c', 'exit 3'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    let view: any;
    await waitUntil(
      async () => (view = (await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body).state === 'exited',
      'the agent to end',
    );
    expect(view.execution).toMatchObject({ exitCode: 3, outcome: null });
  });
});

describe('/tmp', () => {
  it("writes past the sandbox's /tmp size fail, and the folders that hide the service's take nothing", async () => {
    const h = await harness(limitsConfig({ tmpBytes: 8 * MIB }));
    const taskId = await newTask(h, 'tmp');
    const script = [
      'dd if=/dev/zero of=/tmp/fill bs=1M count=32 2>/dev/null; echo "tmp-rc=$?"',
      'echo "tmp-size=$(stat -c %s /tmp/fill)"',
      `dd if=/dev/zero of='${h.config.dataDir}/fill' bs=1M count=4 2>/dev/null; echo "hidden-rc=$?"`,
      'echo tries-ended; sleep 600',
    ].join('\n');
    const res = await launch(h, taskId, { command: ['sh', '-c', script] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await agentOutputUntil(h, res.body.executionId, 'tries-ended');
    expect(out).toMatch(/tmp-rc=[1-9]/);
    expect(Number(/tmp-size=(\d+)/.exec(out)?.[1])).toBeLessThanOrEqual(8 * MIB);
    expect(out).toMatch(/hidden-rc=[1-9]/);
  });
});

describe('which limits apply', () => {
  it("defaults, a profile's, a launch's; the task's group holds the maximum; above it a 400 that names it, and nothing made", async () => {
    const h = await harness({
      ...limitsConfig(),
      agentProfiles: { small: { command: SLEEPER, env: {}, limits: { pids: 150, cpus: 0.5 } } },
    });
    const taskId = await newTask(h, 'which');

    const byDefault = await launch(h, taskId);
    expect(byDefault.status, JSON.stringify(byDefault.body)).toBe(201);
    const own = (file: string, controller = 'memory') =>
      groupFile(h, controller, taskId, byDefault.body.executionId, file);
    expect(own('memory.limit_in_bytes')).toBe(String(256 * MIB));
    expect(own('pids.max', 'pids')).toBe('64');
    expect(own('cpu.cfs_quota_us', 'cpu')).toBe('100000');
    expect(taskGroupFile(h, 'memory', taskId, 'memory.limit_in_bytes')).toBe(String(GIB));
    expect(taskGroupFile(h, 'pids', taskId, 'pids.max')).toBe('200');
    expect((await h.api('GET', `/v1/sessions/${byDefault.body.sessionId}`)).body.limits).toEqual({
      memoryBytes: 256 * MIB,
      pids: 64,
      cpus: 1,
    });

    const profile = await h.api('POST', `/v1/tasks/${taskId}/sessions`, {
      executorType: 'worktree',
      agentProfile: 'small',
    });
    expect(profile.status, JSON.stringify(profile.body)).toBe(201);
    expect(groupFile(h, 'pids', taskId, profile.body.executionId, 'pids.max')).toBe('150');
    expect(groupFile(h, 'cpu', taskId, profile.body.executionId, 'cpu.cfs_quota_us')).toBe('50000');

    const asked = await launch(h, taskId, { limits: { memoryBytes: 512 * MIB, pids: 90 } });
    expect(asked.status, JSON.stringify(asked.body)).toBe(201);
    expect(groupFile(h, 'memory', taskId, asked.body.executionId, 'memory.limit_in_bytes')).toBe(String(512 * MIB));
    expect(groupFile(h, 'pids', taskId, asked.body.executionId, 'pids.max')).toBe('90');

    // A resume keeps what its session's launch resolved.
    const resumed = await h.api('POST', `/v1/sessions/${asked.body.sessionId}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(groupFile(h, 'pids', taskId, resumed.body.execution.id, 'pids.max')).toBe('90');

    const sessionsBefore = (await h.pool.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n;
    const over = await launch(h, taskId, { limits: { pids: 201 } });
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ code: 'limits_exceeded', limit: 'pids', maximum: 200 });
    expect(over.body.error.message).toContain('200');
    const bad = await launch(h, taskId, { limits: { memoryBytes: -1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    // Under what any executor can enforce: refused at the edge, the minimum named.
    const tiny = await launch(h, taskId, { limits: { memoryBytes: 1 } });
    expect(tiny.status, JSON.stringify(tiny.body)).toBe(400);
    expect(tiny.body.error).toMatchObject({ code: 'invalid_request' });
    expect(tiny.body.error.message).toContain(`limits.memoryBytes must be at least ${6 * MIB}`);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n).toBe(sessionsBefore);
  });
});

describe('many at once', () => {
  it("concurrent attaches each get their own group inside the task's; concurrent stops leave no group behind", async () => {
    const h = await harness(limitsConfig());
    const taskId = await newTask(h, 'crowd');
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const attaches = await Promise.all([11, 12, 13, 14].map((pids) => launch(h, taskId, { limits: { pids } })));
    for (const [i, res] of attaches.entries()) {
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(groupFile(h, 'pids', taskId, res.body.executionId, 'pids.max')).toBe(String(11 + i));
    }
    expect(taskGroupFile(h, 'pids', taskId, 'pids.max')).toBe('200');
    const sessions = [first, ...attaches].map((r) => r.body.sessionId as string);
    const stops = await Promise.all(sessions.map((id) => h.api('POST', `/v1/sessions/${id}/stop`, {})));
    for (const stop of stops) expect(stop.status, JSON.stringify(stop.body)).toBe(200);
    // Each supervisor leaves its group as its agent ends; the last one its task's too.
    await waitUntil(
      async () => {
        try {
          taskGroupFile(h, 'pids', taskId, 'pids.max');
          return false;
        } catch {
          return true;
        }
      },
      "the task's group gone",
      20_000,
    );
    // A launch after that makes it again.
    const again = await launch(h, taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(taskGroupFile(h, 'pids', taskId, 'pids.max')).toBe('200');
  });

  it('every group gets its CPU bound: a period written beside the quota never puts back the quota it read (1,000 groups)', async () => {
    // v1 writes cpu.cfs_period_us with the quota it read a moment before: written side by side,
    // about one group in a hundred kept no quota (-1), its agent unbounded. Groups made as a start
    // makes them, one after another, each read back.
    const settings = limitsConfig().limits!;
    const layout = (await agentLimitsLayout(settings))!;
    const owner = { environmentTaskId: randomUUID(), executionId: '' };
    const unbounded: string[] = [];
    try {
      for (let i = 0; i < 1000; i++) {
        owner.executionId = randomUUID();
        await prepareAgentGroup(layout, settings.maximum, owner, { memoryBytes: 64 * MIB, pids: 16, cpus: 0.5 });
        const group = executionGroup(layout.parent, owner.environmentTaskId, owner.executionId);
        const quota = readFileSync(path.join('/sys/fs/cgroup/cpu', group, 'cpu.cfs_quota_us'), 'utf8').trim();
        if (quota !== '50000') unbounded.push(`${owner.executionId}: ${quota}`);
      }
      expect(unbounded).toEqual([]);
    } finally {
      // This test's groups alone: other files' agents have theirs beside them.
      await sweepAgentGroups(layout, { minAgeMs: 0, taskIds: new Set([owner.environmentTaskId]) });
    }
  });
});

describe('disk', () => {
  it("what an agent writes into its task's object store and its home counts toward its quota", async () => {
    const h = await harness({ ...limitsConfig(), taskDiskQuotaBytes: 8 * MIB, diskQuotaCheckEveryMs: 300 });
    const taskId = await newTask(h, 'object-filler');
    // Incompressible blobs written as objects (into the task's store, outside the worktree), and a file in its home.
    const script = [
      'head -c 6000000 /dev/urandom > /tmp/a && git hash-object -w /tmp/a >/dev/null && rm /tmp/a',
      'head -c 6000000 /dev/urandom > "$HOME/b"',
      'echo filled; sleep 600',
    ].join('\n');
    const res = await launch(h, taskId, { command: ['sh', '-c', script] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await agentOutputUntil(h, res.body.executionId, 'filled');
    let view: any;
    await waitUntil(
      async () => (view = (await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body).state === 'stopped',
      'the filler to be stopped',
    );
    expect(view.execution).toMatchObject({ state: 'stopped', outcome: 'disk_quota' });
  });

  it('a disk filler is stopped with the outcome disk_quota and its task refused 507; another task, and one with a larger quota of its own, go on', async () => {
    const h = await harness({ ...limitsConfig(), taskDiskQuotaBytes: 8 * MIB, diskQuotaCheckEveryMs: 300 });
    const fill = ['sh', '-c', 'dd if=/dev/zero of=big bs=1M count=32 2>/dev/null; echo filled; sleep 600'];
    const filler = await newTask(h, 'filler');
    const res = await launch(h, filler, { command: fill });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    let view: any;
    await waitUntil(
      async () => (view = (await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body).state === 'stopped',
      'the filler to be stopped',
    );
    expect(view.execution).toMatchObject({ state: 'stopped', outcome: 'disk_quota' });
    const task = (await h.api('GET', `/v1/tasks/${filler}`)).body;
    expect(task.limits).toMatchObject({ diskQuotaBytes: 8 * MIB, overDiskQuota: true });
    expect(task.disk.bytes).toBeGreaterThan(8 * MIB);

    // Its next launch, and a resume, are refused and make nothing.
    const sessionsBefore = (await h.pool.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n;
    const again = await launch(h, filler);
    expect(again.status).toBe(507);
    expect(again.body.error).toMatchObject({ code: 'task_disk_quota', action: 'free_space' });
    const resumed = await h.api('POST', `/v1/sessions/${res.body.sessionId}/resume`, {});
    expect(resumed.status).toBe(507);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n).toBe(sessionsBefore);
    expect(await metric(h, 'tws_agents_ended_by_limit_total', 'outcome="disk_quota"')).toBe(1);

    // Another task launches; a task with a larger quota of its own fills as much and keeps running.
    const other = await newTask(h, 'beside-filler');
    expect((await launch(h, other)).status).toBe(201);
    const roomy = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, 'roomy'), 'roomy')], {
      diskQuotaBytes: GIB,
    });
    const big = await launch(h, roomy, { command: fill });
    expect(big.status, JSON.stringify(big.body)).toBe(201);
    await agentOutputUntil(h, big.body.executionId, 'filled');
    await waitUntil(
      async () => ((await h.api('GET', `/v1/tasks/${roomy}`)).body.disk?.bytes ?? 0) > 32 * MIB,
      'the roomy workspace measured',
    );
    const roomyView = (await h.api('GET', `/v1/sessions/${big.body.sessionId}`)).body;
    expect(roomyView.state).toBe('running');
    expect((await h.api('GET', `/v1/tasks/${roomy}`)).body.limits).toMatchObject({
      diskQuotaBytes: GIB,
      overDiskQuota: false,
    });
  });
});

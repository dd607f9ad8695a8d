/**
 * The user role cannot become the operator through an agent. As a holder of
 * the user token, a `shell` session tries what worked before: the gateway's environment under
 * /proc, the service's secrets file, another task's workspace. Every step fails in bubblewrap;
 * the agent's own work (files, commits in its worktree) still succeeds.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bringObjectsHome } from '../git/agent-objects-home';
import { agentIsolation } from '../executors/host/agent-sandbox';
import { worktreePath } from '../domain/task-layout';
import { harnessesPerTest, OPERATOR_TOKEN, USER_TOKEN } from './support/harness';
import { agentEnded, createTask, launch, registerRepo, taskWithSession, waitUntil } from './support/scenario';
import { git, makeRepo } from './support/world';

const { harness } = harnessesPerTest();

/** The live processes of a process group, from every /proc/<pid>/stat: pid, parent and command line. */
function groupMembers(pgid: number): { pid: number; ppid: number; cmdline: string }[] {
  const members = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const fields = readFileSync(`/proc/${name}/stat`, 'latin1').split(') ')[1]!.split(' ');
      if (Number(fields[2]) !== pgid || fields[0] === 'Z') continue;
      members.push({
        pid: Number(name),
        ppid: Number(fields[1]),
        cmdline: readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' '),
      });
    } catch {
      // gone meanwhile
    }
  }
  return members;
}

/** A process's raw command line; '' once it has ended (it may, between the listing and the read). */
function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

describe('agent isolation', () => {
  it('an agent reads no token from /proc, no secrets file, no other workspace; it still works and commits in its own', async () => {
    const h = await harness({}, { inProcessWorker: false });
    // The project's setup installs bubblewrap; without it this host could not keep the promise.
    expect(await agentIsolation(h.config.agentSandbox)).toBe('bwrap');
    const gateway = await h.spawnGateway(); // its environment holds the operator token; it runs the launch
    const secrets = path.join(h.config.dataDir, 'secrets.json');
    writeFileSync(secrets, JSON.stringify({ operatorToken: OPERATOR_TOKEN }), { mode: 0o600 });

    const repo = makeRepo(h.scratch, 'isolated');
    const other = makeRepo(h.scratch, 'other');
    const otherTask = await createTask(h, [await registerRepo(h, other, 'other')]);
    const otherLaunch = await launch(h, otherTask);
    expect(otherLaunch.status).toBe(201);
    const otherFolder = path.join(h.config.workspaceRoot, `task-${otherTask}`);
    const taskId = await createTask(h, [await registerRepo(h, repo, 'isolated')]);
    const script = [
      'echo "environ: $(cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c TWS_OPERATOR_TOKEN)"',
      `echo "secrets: $(cat '${secrets}' 2>&1)"`,
      `echo "other: $(ls '${otherFolder}' 2>&1)"`,
      `echo "processes: $(ls /proc | grep -c '^[0-9]')"`,
      'echo work > agent.txt && git add agent.txt && git -c user.name=agent -c user.email=agent@example.com commit -q -m "agent work" && echo "committed"',
      'echo done; sleep 600',
    ].join('; ');
    const res = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, {
      executorType: 'worktree',
      agentProfile: 'shell',
      command: ['sh', '-c', script],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const logPath = (await h.pool.query('SELECT log_path FROM executions WHERE id = $1', [res.body.executionId]))
      .rows[0].log_path;
    let out = '';
    await waitUntil(async () => (out = readFileSync(logPath, 'utf8')).includes('done'), 'the agent to try');

    expect(out).toContain('environ: 0'); // no process of the service is visible
    expect(out).not.toContain(OPERATOR_TOKEN);
    expect(out).not.toContain(USER_TOKEN);
    expect(out).toMatch(/secrets: .*No such file/);
    expect(out).toMatch(/other: .*No such file/);
    expect(Number(/processes: (\d+)/.exec(out)![1])).toBeLessThan(10); // its own few, not the host's
    // Its own work goes on: the commit is on its task branch, seen from outside.
    expect(out).toContain('committed');
    // Its objects went to its task's store and came home as its branch moved (a git status would bring them too).
    const worktree = path.join(h.config.workspaceRoot, `task-${taskId}`, 'isolated');
    await bringObjectsHome(h.config.dataDir, worktree, h.config.gitBinary);
    expect(git(worktree, 'log', '-1', '--format=%s')).toBe('agent work');
    // The operator route stays closed to what the agent holds: the user token.
    expect((await gateway.api('POST', '/v1/orphan-sweep', { dryRun: true }, USER_TOKEN)).status).toBe(403);
    // /readyz says what agents run in.
    expect((await gateway.api('GET', '/readyz', undefined, null)).body).toMatchObject({
      status: 'ready',
      agentIsolation: 'bwrap',
    });
  });

  it('a signal that ends a sandboxed agent is recorded as that signal', async () => {
    const h = await harness();
    const { session: launched } = await taskWithSession(h, 'signal', { command: ['sh', '-c', 'kill -KILL $$'] });
    const session = await agentEnded(h, launched.sessionId);
    expect(session.execution).toMatchObject({ state: 'exited', exitCode: null, signal: 'SIGKILL' });
  });
  it('a stopped sandboxed agent gets its grace period: the signal reaches the agent, not bubblewrap (whose end would SIGKILL it at once)', async () => {
    const h = await harness();
    // The agent saves its work on SIGTERM, a moment after the signal. It is stopped once it runs:
    // a stop while bubblewrap still sets up finds no agent to signal yet (and it is killed after the grace).
    const { session, taskId } = await taskWithSession(h, 'graceful', {
      command: [
        'sh',
        '-c',
        'trap "sleep 0.3; echo saved > saved-on-term.txt; exit 0" TERM; touch running.txt; while true; do sleep 0.1; done',
      ],
    });
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'graceful');
    await waitUntil(async () => existsSync(path.join(worktree, 'running.txt')), 'the agent to run');
    expect((await h.api('POST', `/v1/sessions/${session.sessionId}/stop`)).status).toBe(200);
    await agentEnded(h, session.sessionId);
    expect(readFileSync(path.join(worktree, 'saved-on-term.txt'), 'utf8')).toBe('saved\n');
  });
  it("a stopped sandboxed agent's orphaned process gets the grace period too: it is re-parented inside the sandbox, still a member of the group", async () => {
    const h = await harness();
    // The subshell ends at once, so its child is re-parented to the namespace's pid 1 (bubblewrap's
    // init), no longer below the agent. The agent waits for it to save before it ends itself: the
    // end of the agent ends the namespace, and so the orphan, with SIGKILL.
    const orphan = 'trap "echo saved > orphan-saved.txt; exit 0" TERM; while true; do sleep 0.1; done';
    const agent = `trap "while [ ! -f orphan-saved.txt ]; do sleep 0.05; done; exit 0" TERM; (sh -c '${orphan}' &); while true; do sleep 0.1; done`;
    const { session, taskId } = await taskWithSession(h, 'orphaned', { command: ['sh', '-c', agent] });
    const pgid = (
      await h.pool.query<{ pid: number }>('SELECT pid FROM executions WHERE id = $1', [session.executionId])
    ).rows[0]!.pid;
    // Started, and its parent is bubblewrap's init: the subshell that spawned it is gone.
    const isOrphan = (m: { ppid: number; cmdline: string }) =>
      m.cmdline.startsWith('sh -c trap "echo saved') && readlinkSync(`/proc/${m.ppid}/exe`).endsWith('/bwrap');
    await waitUntil(async () => groupMembers(pgid).some(isOrphan), 'the orphan, re-parented to bubblewrap');
    expect((await h.api('POST', `/v1/sessions/${session.sessionId}/stop`)).status).toBe(200);
    await agentEnded(h, session.sessionId);
    expect(
      readFileSync(path.join(worktreePath(h.config.workspaceRoot, taskId, 'orphaned'), 'orphan-saved.txt'), 'utf8'),
    ).toBe('saved\n');
    await waitUntil(async () => groupMembers(pgid).length === 0, 'no process of the group left');
  });
  it('a stop of a sandboxed agent signals no descendant that left its process group (setsid), as a signal to the group would not', async () => {
    const h = await harness();
    // The agent ends a while after the signal: time enough for the other process to note one.
    const apart = 'trap "echo termed > apart-termed.txt; exit 0" TERM; while true; do sleep 0.1; done';
    const agent = `trap "sleep 0.5; exit 0" TERM; setsid sh -c '${apart}' & while true; do sleep 0.1; done`;
    const { session, taskId } = await taskWithSession(h, 'apart', { command: ['sh', '-c', agent] });
    await waitUntil(
      async () =>
        readdirSync('/proc').some(
          (p) => /^\d+$/.test(p) && cmdlineOf(Number(p)).startsWith('sh\0-c\0trap "echo termed'),
        ),
      'the process apart to start',
    );
    expect((await h.api('POST', `/v1/sessions/${session.sessionId}/stop`)).status).toBe(200);
    await agentEnded(h, session.sessionId);
    expect(existsSync(path.join(worktreePath(h.config.workspaceRoot, taskId, 'apart'), 'apart-termed.txt'))).toBe(
      false,
    );
  });
});

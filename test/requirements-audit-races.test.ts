/**
 * Races the requirements audit found untested, each forced end to end: a superseded
 * materializer's publication refused by its compare-and-set [R1], an agent that cannot be
 * stopped keeping everything of its task in place [R6.6], and unarchives that arrive while the
 * archive's cleanup is in flight [R6].
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OWNERSHIP_MARKER_FILE, taskBranchName, taskFolder, worktreePath } from '../domain/task-layout';
import { launchWorkflowId } from '../domain/workflow-ids';
import { archive, waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import { requiredWhereExpected } from './support/host-abilities';
import { liveAgents } from './support/processes';
import { createTask, expectSafeError, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import {
  branches,
  commitOf,
  git,
  gitWrapper,
  loggedGitCommands,
  makeRepo,
  processAlive,
  processCwd,
  worktreePaths,
} from './support/world';

const { harness, cleanups, scratch } = harnessesPerTest();

/** Resolves once the wrapper logged a `git <subcommand>` (it logs before it sleeps): that git is under way. */
const gitStarted = (logTo: string, subcommand: string) =>
  waitUntil(
    async () => loggedGitCommands(logTo).some((line) => line.startsWith(`${subcommand} `)),
    `git ${subcommand} to start`,
  );

async function environmentOf(h: Harness, taskId: string) {
  return (
    await h.pool.query(
      'SELECT id, status, materializer_session_id, materialized, workspace_path, task_folder, ownership_generation FROM task_environments WHERE task_id = $1',
      [taskId],
    )
  ).rows;
}

const inventoryOf = async (h: Harness, environmentId: string) =>
  (
    await h.pool.query(
      'SELECT repository_id, worktree_path, worktree_branch, status FROM environment_repos WHERE environment_id = $1 ORDER BY created_at',
      [environmentId],
    )
  ).rows;

const executionsOf = async (h: Harness, taskId: string) =>
  (
    await h.pool.query(
      'SELECT x.id, x.status, x.pid, x.process_start_time FROM executions x JOIN sessions s ON s.id = x.session_id WHERE s.task_id = $1',
      [taskId],
    )
  ).rows;

const processStartTime = (pid: number): string | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
};

/**
 * An agent no signal can end, for as long as the test says: its whole process tree in a frozen
 * cgroup (v1 freezer). A frozen process stays in uninterruptible sleep, SIGKILL included, until
 * thawed; then the signals it was sent take effect. A host fault, injected from outside the product.
 */
const FREEZER_ROOT = '/sys/fs/cgroup/freezer';
const freezerUsable = (() => {
  try {
    const probe = path.join(FREEZER_ROOT, `tws-probe-${process.pid}-${randomUUID().slice(0, 8)}`);
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
})();

/**
 * Whether the kernel has the freezer controller in a v1 hierarchy (/proc/cgroups: a hierarchy id
 * other than 0, enabled): then its folder should be there, even where a broken mount lost it.
 */
const freezerInKernel = (() => {
  try {
    const line = readFileSync('/proc/cgroups', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('freezer\t'));
    const [, hierarchy, , enabled] = (line ?? '').split('\t');
    return Number(hierarchy) > 0 && enabled === '1';
  } catch {
    return false;
  }
})();

// A root on a host whose kernel has the v1 freezer (or whose freezer folder is there) can use it:
// there, one it cannot use fails the run, a broken or missing mount included.
requiredWhereExpected(
  'a v1 freezer group',
  freezerUsable,
  process.getuid?.() === 0 && (freezerInKernel || existsSync(FREEZER_ROOT)),
);
/** Said in the name of a test that skips for it. */
const NO_FREEZER = freezerUsable ? '' : ' (skipped: this host gives no v1 freezer group)';

function processTree(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const tree = [root];
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of parentOf) if (tree.includes(ppid) && !tree.includes(pid)) (tree.push(pid), (grew = true));
  }
  return tree;
}

/**
 * Freezes the agent's whole tree. `thaw()` lets the signals it was sent land and waits for it to
 * end; the group is also thawed, its members ended and the group removed after the file, however
 * the test ended (registered before anything can fail).
 */
async function freezeTree(root: number): Promise<{ members: number[]; thaw: () => Promise<void> }> {
  const group = path.join(FREEZER_ROOT, `tws-test-${randomUUID().slice(0, 8)}`);
  const inGroup = () => readFileSync(path.join(group, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  const state = (to?: 'FROZEN' | 'THAWED') =>
    to
      ? writeFileSync(path.join(group, 'freezer.state'), to)
      : readFileSync(path.join(group, 'freezer.state'), 'utf8').trim();
  mkdirSync(group);
  cleanups.push(async () => {
    if (!existsSync(group)) return;
    state('THAWED');
    for (const pid of inGroup()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await waitUntil(async () => inGroup().length === 0, "the frozen agent's group to empty", 10_000).catch(() => {});
    rmdirSync(group);
  });
  const join = (pid: number) => {
    try {
      writeFileSync(path.join(group, 'cgroup.procs'), String(pid));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err; // a helper that ended meanwhile
    }
  };
  processTree(root).forEach(join);
  state('FROZEN');
  await waitUntil(async () => state() === 'FROZEN', 'the agent to freeze');
  // A process forked before the freeze but after the listing joins now (a frozen group freezes
  // what joins it); frozen, the tree no longer changes.
  processTree(root)
    .filter((pid) => !inGroup().includes(pid))
    .forEach(join);
  await waitUntil(async () => state() === 'FROZEN', 'the agent to freeze');
  const members = processTree(root);
  if (!members.every((pid) => inGroup().includes(pid)))
    throw new Error(`part of the agent's tree escaped the freeze: ${members} vs ${inGroup()}`);
  return {
    members,
    async thaw() {
      state('THAWED');
      await waitUntil(async () => !processAlive(root), 'the thawed agent to end', 10_000);
    },
  };
}

describe('a superseded materializer [R1]', () => {
  it("publishes nothing once another session is the materializer: 409 workspace_reuse_unsafe, no agent, its worktree left unpublished, the other materializer's rows as they were", async () => {
    const dir = await scratch();
    const logTo = path.join(dir, 'superseded.log');
    const h = await harness({ gitBinary: gitWrapper(dir, { sleepOnWorktreeAdd: 3, logTo }) });
    const repo = makeRepo(h.scratch, 'superseded');
    const repoId = await registerRepo(h, repo, 'superseded');
    const taskId = await createTask(h, [repoId]);

    const slow = launch(h, taskId);
    // The first launch was elected and its `git worktree add` sleeps: then the environment gets
    // another materializer, as a re-election would name one.
    await gitStarted(logTo, 'worktree add');
    const [elected] = await environmentOf(h, taskId);
    expect(elected).toMatchObject({ status: 'creating', materialized: false });
    const slowSession: string = elected.materializer_session_id;
    const other = randomUUID();
    await h.pool.query(
      "INSERT INTO sessions (id, task_id, environment_id, state, executor_type, agent_profile, role) VALUES ($1, $2, $3, 'starting', 'worktree', 'shell', 'materialized')",
      [other, taskId, elected.id],
    );
    const moved = await h.pool.query(
      'UPDATE task_environments SET materializer_session_id = $2 WHERE id = $1 AND materializer_session_id = $3',
      [elected.id, other, slowSession],
    );
    expect(moved.rowCount).toBe(1);
    const othersRows = {
      environment: await environmentOf(h, taskId),
      session: (await h.pool.query('SELECT * FROM sessions WHERE id = $1', [other])).rows,
    };

    const res = await slow;
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expectSafeError(res.body, 'workspace_reuse_unsafe');
    expect(res.body.error).toMatchObject({ recoverable: true, action: 'reset_environment' });
    // The git step did finish (the publish came after it): the refusal is the compare-and-set's.
    expect(loggedGitCommands(logTo).filter((l) => l.startsWith('worktree add'))).toHaveLength(1);

    // What the other materializer owns is as it was: still creating, still its, nothing published.
    expect(await environmentOf(h, taskId)).toEqual(othersRows.environment);
    expect(othersRows.environment[0]).toMatchObject({
      status: 'creating',
      materializer_session_id: other,
      materialized: false,
      workspace_path: null,
    });
    expect((await h.pool.query('SELECT * FROM sessions WHERE id = $1', [other])).rows).toEqual(othersRows.session);
    expect(await inventoryOf(h, elected.id)).toEqual([]);
    // The superseded launch left no session, no execution, no spawn intent, and no agent.
    expect((await h.pool.query('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows).toEqual([{ id: other }]);
    expect(await executionsOf(h, taskId)).toEqual([]);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM spawn_intents WHERE task_id = $1', [taskId])).rows[0].n,
    ).toBe(0);
    expect(liveAgents({ taskId })).toEqual([]);
    // Its worktree is not its to undo any more (workspace-materialize mayUndo): it stays,
    // unpublished, on the task branch at the base, for the new materializer to adopt under the
    // repository lock; no row names it.
    const slot = worktreePath(h.config.workspaceRoot, taskId, 'superseded');
    expect(worktreePaths(repo)).toEqual([repo, slot]);
    expect(git(slot, 'symbolic-ref', '--short', 'HEAD')).toBe(taskBranchName(taskId));
    expect(commitOf(repo, taskBranchName(taskId))).toBe(commitOf(repo, 'main'));
    const history = await h.temporal.workflow.getHandle(launchWorkflowId(slowSession)).describe();
    expect(history.status.name).toBe('FAILED');
  });
});

describe('an agent that cannot be stopped [R6.6]', () => {
  it.skipIf(!freezerUsable)(
    `blocks the archive's removal: the job retries then waits for an operator with process_stop_failed, the worktree, its branch and its row untouched; once the agent can end, the retry removes it${NO_FREEZER}`,
    async () => {
      const h = await harness({ cleanupPolicy: { waitsMs: [200], maxAttempts: 2 } });
      const repo = makeRepo(h.scratch, 'unstoppable');
      const taskId = await createTask(h, [await registerRepo(h, repo, 'unstoppable')]);
      const launched = await launch(h, taskId);
      expect(launched.status, JSON.stringify(launched.body)).toBe(201);
      const worktree = worktreePath(h.config.workspaceRoot, taskId, 'unstoppable');
      const pid = await pidOf(h, launched.body.sessionId);
      const startTime = processStartTime(pid);
      // The agent's shell forks its child a moment after the launch answers: freeze the whole tree.
      await waitUntil(async () => processTree(pid).length > 1, "the agent's child to start");
      const frozen = await freezeTree(pid);
      expect(frozen.members.length).toBeGreaterThan(1);
      const inventoryBefore = await inventoryOf(h, launched.body.taskEnvironmentId);
      const branchesBefore = branches(repo);

      const job = await archive(h, taskId);
      const stuck = await waitForJob(h, job.operationId, ['needs_operator', 'succeeded', 'cancelled'], 60_000);
      expect(stuck).toMatchObject({
        state: 'needs_operator',
        attempts: 2,
        lastError: 'process_stop_failed',
        nextAttemptAt: null,
      });
      // The first failure was retried on the schedule (a stop failure is worth another try).
      const timers = (await h.temporal.workflow.getHandle(job.workflowId).fetchHistory()).events!.filter(
        (e) => e.timerStartedEventAttributes,
      );
      expect(timers).toHaveLength(1);
      expect(stuck.report).toMatchObject({ processesStopped: 0, worktrees: [] });

      // Nothing was removed: the agent is the same process, its execution reads running, and the
      // worktree, its registration, its marker, the task branch and the inventory row are all there.
      expect(processStartTime(pid)).toBe(startTime);
      expect(processCwd(pid)).toBe(worktree);
      expect((await executionsOf(h, taskId)).map((x) => [x.id, x.status])).toEqual([
        [launched.body.executionId, 'running'],
      ]);
      expect(existsSync(path.join(worktree, 'README.md'))).toBe(true);
      expect(existsSync(path.join(taskFolder(h.config.workspaceRoot, taskId), OWNERSHIP_MARKER_FILE))).toBe(true);
      expect(worktreePaths(repo)).toEqual([repo, worktree]);
      expect(branches(repo)).toEqual(branchesBefore);
      expect(await inventoryOf(h, launched.body.taskEnvironmentId)).toEqual(inventoryBefore);
      // The barrier holds while it waits.
      expect((await launch(h, taskId)).status).toBe(409);

      // The host lets the agent end (the SIGKILL it was sent lands); the operator's retry finishes.
      await frozen.thaw();
      expect(processAlive(pid)).toBe(false);
      expect((await h.api('POST', `/v1/cleanup-jobs/${job.operationId}/retry`, undefined, OPERATOR_TOKEN)).status).toBe(
        202,
      );
      const done = await waitForJob(h, job.operationId);
      expect(done.report.worktrees).toEqual([expect.objectContaining({ worktreePath: worktree, outcome: 'removed' })]);
      expect(worktreePaths(repo)).toEqual([repo]);
      expect(branches(repo)).toContain(taskBranchName(taskId));
    },
  );
});

describe("unarchive while the archive's cleanup is in flight [R6]", () => {
  /** Unarchives sent at once; each answer with the job row and the worktree as they were the moment it arrived. */
  /** Every unarchive answered 200 (the task active), and when it did the job had ended so and the worktree was there or not. */
  function expectEveryUnarchiveAfter(
    answers: Awaited<ReturnType<typeof unarchivesAtOnce>>,
    taskId: string,
    jobState: string,
    worktreeThere: boolean,
  ) {
    for (const { res, jobAtAnswer, worktreeAtAnswer } of answers) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ id: taskId, state: 'active' });
      expect(jobAtAnswer).toBe(jobState);
      expect(worktreeAtAnswer).toBe(worktreeThere);
    }
  }

  async function unarchivesAtOnce(h: Harness, taskId: string, operationId: string, worktree: string, n: number) {
    return Promise.all(
      Array.from({ length: n }, async () => {
        const res = await h.api('POST', `/v1/tasks/${taskId}/unarchive`);
        const job = (
          await h.pool.query('SELECT state, finished_at FROM cleanup_jobs WHERE operation_id = $1', [operationId])
        ).rows[0];
        return { res, jobAtAnswer: job.state as string, worktreeAtAnswer: existsSync(worktree) };
      }),
    );
  }

  it('waits for an attempt that succeeds: every unarchive answers after the job succeeded, the task is active, the worktree gone and its branch kept, and the next launch recreates it at the same path', async () => {
    const dir = await scratch();
    const logTo = path.join(dir, 'in-flight-removal.log');
    const h = await harness({ gitBinary: gitWrapper(dir, { sleepOnWorktreeRemove: 3, logTo }) });
    const repo = makeRepo(h.scratch, 'in-flight');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'in-flight')]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'in-flight');
    const kept = commitOf(repo, taskBranchName(taskId));

    const job = await archive(h, taskId);
    await gitStarted(logTo, 'worktree remove');
    // Never before the attempt ended: the job had already finished, the worktree already gone.
    expectEveryUnarchiveAfter(
      await unarchivesAtOnce(h, taskId, job.operationId, worktree, 4),
      taskId,
      'succeeded',
      false,
    );
    const done = await waitForJob(h, job.operationId);
    expect(done.report.worktrees).toEqual([expect.objectContaining({ worktreePath: worktree, outcome: 'removed' })]);
    expect((await h.pool.query('SELECT archived_at FROM tasks WHERE id = $1', [taskId])).rows).toEqual([
      { archived_at: null },
    ]);
    expect((await environmentOf(h, taskId))[0]).toMatchObject({ status: 'released' });
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(commitOf(repo, taskBranchName(taskId))).toBe(kept);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM cleanup_jobs WHERE task_id = $1', [taskId])).rows[0].n,
    ).toBe(1);

    const again = await launch(h, taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body).toMatchObject({ role: 'materialized', taskEnvironmentId: first.body.taskEnvironmentId });
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
    expect(git(worktree, 'symbolic-ref', '--short', 'HEAD')).toBe(taskBranchName(taskId));
    expect(processCwd(await pidOf(h, again.body.sessionId))).toBe(worktree);
  });

  it('waits for an attempt that fails, then cancels the job: every unarchive answers after it was cancelled, the task is active, the clean worktree still there, and the next launch adopts it', async () => {
    const dir = await scratch();
    const logTo = path.join(dir, 'in-flight-failure.log');
    const h = await harness({
      gitBinary: gitWrapper(dir, {
        sleepOnWorktreeRemove: 3,
        failSubcommand: 'worktree remove',
        failTimes: 1_000_000,
        logTo,
      }),
      cleanupPolicy: { waitsMs: [60_000], maxAttempts: 8 },
    });
    const repo = makeRepo(h.scratch, 'in-flight-fails');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'in-flight-fails')]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'in-flight-fails');
    // Clean: a dirty one would be kept by the archive whatever git says (kept_dirty, succeeded).
    const registration = git(worktree, 'rev-parse', '--absolute-git-dir');

    const job = await archive(h, taskId);
    await gitStarted(logTo, 'worktree remove');
    expectEveryUnarchiveAfter(
      await unarchivesAtOnce(h, taskId, job.operationId, worktree, 4),
      taskId,
      'cancelled',
      true,
    );
    // One attempt ran, to its end; none after the cancel.
    const cancelled = await waitForJob(h, job.operationId, ['cancelled']);
    expect(cancelled).toMatchObject({
      attempts: 1,
      report: expect.objectContaining({ ended: { action: 'cancel', by: 'unarchive' } }),
    });
    expect(await h.temporal.workflow.getHandle(job.workflowId).result()).toMatchObject({ state: 'cancelled' });
    expect((await h.pool.query('SELECT archived_at FROM tasks WHERE id = $1', [taskId])).rows).toEqual([
      { archived_at: null },
    ]);
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
    expect(git(worktree, 'rev-parse', '--absolute-git-dir')).toBe(registration);

    const again = await launch(h, taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.taskEnvironmentId).toBe(first.body.taskEnvironmentId);
    expect(processCwd(await pidOf(h, again.body.sessionId))).toBe(worktree);
    // Adopted: the same registration, not a new worktree.
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
    expect(git(worktree, 'rev-parse', '--absolute-git-dir')).toBe(registration);
  });
});

/**
 * The scenarios whose histories test/histories keeps: each drives the real service (gateway,
 * worker, git, PostgreSQL) down one path of a workflow and records the history of the run it made
 * as `<workflowType>-<case>.json`. Run only by `make record-histories` (test/recording/record-histories.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { ensureSchedules } from '../../worker/schedules';
import { taskDirName } from '../../domain/task-layout';
import {
  launchWorkflowId,
  mergeWorkflowId,
  taskDiffWorkflowId,
  agentLogWorkflowId,
  repositoryCheckWorkflowId,
  sshTargetCheckWorkflowId,
} from '../../domain/workflow-ids';
import { archive, deleteTask, waitForJob } from './cleanup';
import type { Harness } from './harness';
import { OPERATOR_TOKEN } from './harness';
import { closedWorkflowIds, recordHistory } from './history-fixtures';
import {
  admittedSession,
  createTask,
  lastResumeRun,
  launch,
  registerRepo,
  taskWithSession,
  waitUntil,
} from './scenario';
import { startSshServer, targetFields } from './ssh-server';
import { clearGitFault, git, gitWrapper, makeRepo } from './world';
import { commitIn, finish, taskWithCommits } from './finishing';

type MakeHarness = (...args: Parameters<typeof import('./harness').createHarness>) => Promise<Harness>;

const worktreeOf = (h: Harness, taskId: string, repoName: string) =>
  path.join(h.config.workspaceRoot, taskDirName(taskId), repoName);
/** The task's cleanup job, once its workflow has prepared it. */
async function jobOf(h: Harness, taskId: string): Promise<{ operation_id: string; workflow_id: string }> {
  let job: { operation_id: string; workflow_id: string } | undefined;
  await waitUntil(async () => {
    job = (await h.pool.query('SELECT operation_id, workflow_id FROM cleanup_jobs WHERE task_id = $1', [taskId]))
      .rows[0];
    return job !== undefined;
  }, `the cleanup job of task ${taskId}`);
  return job!;
}

/** Launch (materialize, attach, transition, refusals), git status, stop, resume, and the cleanups that need no fault. */
export async function recordHappyPaths(harness: MakeHarness): Promise<void> {
  const h = await harness();
  const record = (name: string, workflowId: string) => recordHistory(h.temporal, name, workflowId);

  // launchSession: the first launch materializes, the second attaches.
  const main = await taskWithSession(h, 'work');
  await record('launchSession-materialized', launchWorkflowId(main.session.sessionId));
  const attached = await launch(h, main.taskId);
  expect(attached.status, JSON.stringify(attached.body)).toBe(201);
  await record('launchSession-attached', launchWorkflowId(attached.body.sessionId));

  // observeGitStatus: a dirty canonical worktree is read on its host and recorded.
  writeFileSync(path.join(worktreeOf(h, main.taskId, 'work'), 'wip.txt'), 'work in progress\n');
  const status = await h.api('GET', `/v1/tasks/${main.taskId}/git-status`);
  expect(status.status, JSON.stringify(status.body)).toBe(200);
  await record('observeGitStatus-dirty-worktree', `git-status/${main.session.taskEnvironmentId}`);

  // stopSession: the attached session's agent is stopped.
  expect((await h.api('POST', `/v1/sessions/${attached.body.sessionId}/stop`)).status).toBe(200);
  const [stopId] = await closedWorkflowIds(
    h.temporal,
    `WorkflowType = 'stopSession' AND SessionId = '${attached.body.sessionId}'`,
  );
  await record('stopSession-running-agent', stopId!);

  // resumeSession: one whose agent still runs (stopped first), one whose agent was stopped.
  expect((await h.api('POST', `/v1/sessions/${main.session.sessionId}/resume`)).status).toBe(200);
  await record('resumeSession-stops-previous-agent', await lastResumeRun(h, main.session.sessionId));
  expect((await h.api('POST', `/v1/sessions/${attached.body.sessionId}/resume`)).status).toBe(200);
  await record('resumeSession-after-stop', await lastResumeRun(h, attached.body.sessionId));

  // cleanupTask: a delete refused at preparation (dirty, no consent), then one that saves the work.
  const refused = await deleteTask(h, main.taskId);
  expect(refused.status, JSON.stringify(refused.body)).toBe(409);
  const [refusedId] = await closedWorkflowIds(h.temporal, `WorkflowType = 'cleanupTask' AND TaskId = '${main.taskId}'`);
  await record('cleanupTask-delete-refused-dirty-worktree', refusedId!);
  const deleted = await deleteTask(h, main.taskId, 'discardChanges=true');
  expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
  const saved = await waitForJob(h, deleted.body.operationId);
  expect(saved.report.worktrees[0].outcome).toBe('saved_and_removed');
  await record('cleanupTask-delete-saved-work', deleted.body.workflowId);

  // launchSession: worktree → local transition; then an archive (agents stopped, retained
  // worktree removed); then a launch on the archived task, refused at admission.
  const moved = await taskWithSession(h, 'transition');
  const transitioned = await launch(h, moved.taskId, { executorType: 'local' });
  expect(transitioned.body.role, JSON.stringify(transitioned.body)).toBe('transitioned');
  await record('launchSession-transitioned', launchWorkflowId(transitioned.body.sessionId));
  const archived = await archive(h, moved.taskId);
  await waitForJob(h, archived.operationId);
  await record('cleanupTask-archive', archived.workflowId);
  expect((await launch(h, moved.taskId)).status).toBe(409);
  const [refusedLaunch] = await closedWorkflowIds(
    h.temporal,
    `WorkflowType = 'launchSession' AND TaskId = '${moved.taskId}' AND ExecutionStatus = 'Failed'`,
  );
  await record('launchSession-refused-task-archived', refusedLaunch!);

  // launchSession: the repository went away before the first launch; the materialization is undone.
  const gone = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, 'gone'), 'gone')]);
  rmSync(path.join(h.scratch, 'gone'), { recursive: true });
  expect((await launch(h, gone)).status).toBe(409);
  const [failedLaunch] = await closedWorkflowIds(h.temporal, `WorkflowType = 'launchSession' AND TaskId = '${gone}'`);
  await record('launchSession-materialization-failed', failedLaunch!);

  // cascadeCleanup: archive of a parent with a child (each its own worktree), and the child's member run.
  const parent = await taskWithSession(h, 'parent');
  const child = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, 'child'), 'child')], {
    parentTaskId: parent.taskId,
  });
  expect((await launch(h, child)).status).toBe(201);
  const cascade = await archive(h, parent.taskId, { cascade: true });
  await waitForJob(h, cascade.operationId);
  await record('cascadeCleanup-archive-parent-and-child', cascade.workflowId);
  await record('cleanupTask-cascade-member', (await jobOf(h, child)).workflow_id);

  // cascadeCleanup: a cascade delete refused before any change, a worktree in the tree being dirty.
  const dirtyRoot = await taskWithSession(h, 'dirty-root');
  writeFileSync(path.join(worktreeOf(h, dirtyRoot.taskId, 'dirty-root'), 'wip.txt'), 'uncommitted\n');
  expect((await deleteTask(h, dirtyRoot.taskId, 'cascade=true')).status).toBe(409);
  const [refusedCascade] = await closedWorkflowIds(
    h.temporal,
    `WorkflowType = 'cascadeCleanup' AND TaskId = '${dirtyRoot.taskId}'`,
  );
  await record('cascadeCleanup-delete-refused-dirty-worktree', refusedCascade!);

  // expireQuickChats: its schedule fires; the idle quick chat is deleted by its own cleanup.
  const quick = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, 'quick'), 'quick')], {
    quickChat: true,
  });
  const quickSession = await launch(h, quick);
  expect(quickSession.status).toBe(201);
  expect((await h.api('POST', `/v1/sessions/${quickSession.body.sessionId}/stop`)).status).toBe(200);
  await h.pool.query("UPDATE tasks SET last_activity_at = now() - interval '8 days' WHERE id = $1", [quick]);
  const schedules = await ensureSchedules(
    h.temporal,
    { ...h.config, quickChatIdleMs: 7 * 24 * 3600_000 },
    `-${randomUUID()}`,
  );
  try {
    await h.temporal.schedule.getHandle(schedules.quickChatExpiry).trigger();
    const [expiryId] = await closedWorkflowIds(
      h.temporal,
      `WorkflowType = 'expireQuickChats' AND TaskQueue = '${h.config.taskQueue}'`,
    );
    await record('expireQuickChats-archives-idle-chat', expiryId!);
  } finally {
    for (const id of Object.values(schedules)) await h.temporal.schedule.getHandle(id).delete();
  }
  const expiry = await jobOf(h, quick);
  await waitForJob(h, expiry.operation_id);
  await record('cleanupTask-quick-chat-expiry', expiry.workflow_id);

  // orphanSweep: an old folder nothing references is removed; live task folders are kept.
  const orphan = path.join(h.config.workspaceRoot, 'orphan-old');
  mkdirSync(orphan);
  const longAgo = new Date(Date.now() - 48 * 3600_000);
  utimesSync(orphan, longAgo, longAgo);
  const swept = await h.api('POST', '/v1/orphan-sweep', {}, OPERATOR_TOKEN);
  expect(swept.body.removed, JSON.stringify(swept.body)).toEqual(['orphan-old']);
  const [sweepId] = await closedWorkflowIds(
    h.temporal,
    `WorkflowType = 'orphanSweep' AND TaskQueue = '${h.config.taskQueue}'`,
  );
  await record('orphanSweep-removes-old-orphan', sweepId!);

  await recordBoardDelete(h);
}

/** A git that cannot remove worktrees (cleanup policy: 200 ms, 400 ms, then needs_operator after 3 attempts). */
export async function recordOperatorPaths(harness: MakeHarness): Promise<void> {
  const wrapper = gitWrapper((await harness()).scratch, { failSubcommand: 'worktree remove', failTimes: 1000 });
  const h = await harness({ gitBinary: wrapper });
  const retried = await taskWithSession(h, 'retried');
  const unarchived = await taskWithSession(h, 'unarchived');
  const retriedJob = await archive(h, retried.taskId);
  const unarchivedJob = await archive(h, unarchived.taskId);
  await waitForJob(h, retriedJob.operationId, ['needs_operator']);
  await waitForJob(h, unarchivedJob.operationId, ['needs_operator']);

  // Unarchive while the job waits for an operator: it ends cancelled.
  expect((await h.api('POST', `/v1/tasks/${unarchived.taskId}/unarchive`)).status).toBe(200);
  await waitForJob(h, unarchivedJob.operationId, ['cancelled']);
  await recordHistory(h.temporal, 'cleanupTask-needs-operator-then-unarchived', unarchivedJob.workflowId);

  // retry_wait, retry_wait, needs_operator; the fault cleared, the operator's retry succeeds.
  clearGitFault(wrapper);
  expect(
    (await h.api('POST', `/v1/cleanup-jobs/${retriedJob.operationId}/retry`, undefined, OPERATOR_TOKEN)).status,
  ).toBe(202);
  await waitForJob(h, retriedJob.operationId);
  await recordHistory(h.temporal, 'cleanupTask-needs-operator-then-retried', retriedJob.workflowId);
}

/** A git that cannot remove worktrees and a long retry wait: a cancel during the durable timer, and a job whose run was lost. */
export async function recordInterruptedPaths(harness: MakeHarness): Promise<void> {
  const wrapper = gitWrapper((await harness()).scratch, { failSubcommand: 'worktree remove', failTimes: 1000 });
  const h = await harness({ gitBinary: wrapper, cleanupPolicy: { waitsMs: [600_000], maxAttempts: 8 } });
  const waiting = await taskWithSession(h, 'waiting');
  const stranded = await taskWithSession(h, 'stranded');
  const waitingJob = await archive(h, waiting.taskId);
  const strandedJob = await archive(h, stranded.taskId);
  await waitForJob(h, waitingJob.operationId, ['retry_wait']);
  await waitForJob(h, strandedJob.operationId, ['retry_wait']);

  // Unarchive during the retry wait: the timer is cut short and the job ends cancelled.
  expect((await h.api('POST', `/v1/tasks/${waiting.taskId}/unarchive`)).status).toBe(200);
  await waitForJob(h, waitingJob.operationId, ['cancelled']);
  await recordHistory(h.temporal, 'cleanupTask-cancelled-in-retry-wait', waitingJob.workflowId);

  // The run is lost while its job is active; the consistency check gives the job a new run, which succeeds.
  await h.temporal.workflow.getHandle(strandedJob.workflowId).terminate('lost');
  clearGitFault(wrapper);
  await h.pool.query("UPDATE cleanup_jobs SET updated_at = now() - interval '2 minutes' WHERE operation_id = $1", [
    strandedJob.operationId,
  ]);
  const reconcileId = `reconcile/${randomUUID()}`;
  const checked = await h.temporal.workflow.execute('reconcileRecords', {
    workflowId: reconcileId,
    taskQueue: h.config.taskQueue,
    args: [{ hostId: h.config.hostId }],
  });
  expect(checked).toMatchObject({ records: { repaired: { cleanup_job_resumed: 1 } } });
  await recordHistory(h.temporal, 'reconcileRecords-resumes-stranded-job', reconcileId);
  await waitForJob(h, strandedJob.operationId);
  await recordHistory(h.temporal, 'cleanupTask-continued-after-lost-run', strandedJob.workflowId);
}

/** A launch cancelled while its workspace is made (its session deleted), and a resume that materializes a released environment again. */
export async function recordCancelledAndRematerialized(harness: MakeHarness): Promise<void> {
  const slow = gitWrapper((await harness()).scratch, { sleepOnWorktreeAdd: 2 });
  const h = await harness({ gitBinary: slow });
  const record = (name: string, workflowId: string) => recordHistory(h.temporal, name, workflowId);

  const name = `cancel-${randomUUID().slice(0, 8)}`;
  const taskId = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, name), name)]);
  const pending = launch(h, taskId);
  const sessionId = await admittedSession(h, taskId);
  expect((await h.api('DELETE', `/v1/sessions/${sessionId}`)).status).toBe(204);
  expect((await pending).body.error?.code).toBe('launch_cancelled');
  await record('launchSession-cancelled-while-materializing', launchWorkflowId(sessionId));

  const released = await taskWithSession(h, 'released');
  await waitForJob(h, (await archive(h, released.taskId)).operationId);
  expect((await h.api('POST', `/v1/tasks/${released.taskId}/unarchive`)).status).toBe(200);
  expect((await h.api('POST', `/v1/sessions/${released.session.sessionId}/resume`)).status).toBe(200);
  await record('resumeSession-rematerialized-after-unarchive', await lastResumeRun(h, released.session.sessionId));
}

/** boardDelete: a board of two tasks, one worktree dirty: refused before any change, then deleted with consent (the work saved). */
async function recordBoardDelete(h: Harness): Promise<void> {
  const repoId = await registerRepo(h, makeRepo(h.scratch, 'board'), 'board');
  const board = (await h.api('POST', '/v1/boards', { name: 'board' })).body.id as string;
  const tasks = [await createTask(h, [repoId], { boardId: board }), await createTask(h, [repoId], { boardId: board })];
  for (const taskId of tasks) expect((await launch(h, taskId)).status).toBe(201);
  writeFileSync(path.join(worktreeOf(h, tasks[0]!, 'board'), 'wip.txt'), 'uncommitted\n');
  expect((await h.api('DELETE', `/v1/boards/${board}`, undefined, OPERATOR_TOKEN)).status).toBe(409);
  const [refusedId] = await closedWorkflowIds(
    h.temporal,
    `WorkflowType = 'boardDelete' AND TaskQueue = '${h.config.taskQueue}'`,
  );
  await recordHistory(h.temporal, 'boardDelete-refused-dirty-worktree', refusedId!);
  const deleted = await h.api('DELETE', `/v1/boards/${board}?discardChanges=true`, undefined, OPERATOR_TOKEN);
  expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
  for (const o of deleted.body.operations) await waitForJob(h, o.operationId);
  await recordHistory(h.temporal, 'boardDelete-two-tasks-dirty-work-saved', deleted.body.workflowId);
}

/**
 * Hosts: a repository checked on its host (accepted, and refused because no worker of the named
 * host answers), and a cleanup whose first attempt found its host down and whose next one ran.
 */
export async function recordHostPaths(harness: MakeHarness): Promise<void> {
  const h = await harness({ hostHeartbeatEveryMs: 1000, cleanupPolicy: { waitsMs: [2000], maxAttempts: 5 } });
  const record = (name: string, workflowId: string) => recordHistory(h.temporal, name, workflowId);
  const repo = makeRepo(h.scratch, 'on-host');
  const check = (hostId: string) =>
    h.temporal.workflow.start('checkRepositoryOnHost', {
      taskQueue: h.config.taskQueue,
      workflowId: repositoryCheckWorkflowId(randomUUID()),
      args: [{ hostId, path: repo }],
    });
  await record('checkRepositoryOnHost-accepted', (await check(h.config.hostId)).workflowId);
  await record('checkRepositoryOnHost-host-unavailable', (await check('no-such-host')).workflowId);

  // An SSH target's check on the host that holds its key, and one whose target is down.
  const ssh = await startSshServer();
  try {
    const target = { id: randomUUID(), ...targetFields(ssh) };
    const checkTarget = () =>
      h.temporal.workflow.start('checkSshTargetOnHost', {
        taskQueue: h.config.taskQueue,
        workflowId: sshTargetCheckWorkflowId(randomUUID()),
        args: [{ hostId: h.config.hostId, target }],
      });
    const usable = await checkTarget();
    expect(await usable.result()).toBe('usable');
    await record('checkSshTargetOnHost-usable', usable.workflowId);
    await ssh.stop();
    await record('checkSshTargetOnHost-target-unavailable', (await checkTarget()).workflowId);
  } finally {
    await ssh.remove();
  }

  const t = await taskWithSession(h, 'host-down');
  // An agent's log read on its host (for a gateway that is not that host).
  const { log_path: logPath } = (
    await h.pool.query('SELECT log_path FROM executions WHERE session_id = $1', [t.session.sessionId])
  ).rows[0];
  const read = await h.temporal.workflow.start('readAgentLogOnHost', {
    taskQueue: h.config.taskQueue,
    workflowId: agentLogWorkflowId(randomUUID()),
    args: [{ hostId: h.config.hostId, logPath, lines: 10 }],
  });
  await record('readAgentLogOnHost-tail', read.workflowId);
  expect((await h.api('POST', `/v1/sessions/${t.session.sessionId}/stop`)).status).toBe(200);
  // Its record goes stale (as a killed worker's would) until the next heartbeat brings it back.
  await h.pool.query(`UPDATE hosts SET last_seen_at = now() - interval '1 hour' WHERE host_id = $1`, [h.config.hostId]);
  const archived = await archive(h, t.taskId);
  const job = await waitForJob(h, archived.operationId);
  expect(job.attempts).toBeGreaterThanOrEqual(2);
  await record('cleanupTask-host-down-then-back', archived.workflowId);

  // A delete that must ask a down host whether its worktrees are dirty is refused at once; its
  // git status is the last observed.
  const kept = await taskWithSession(h, 'host-down-delete');
  await h.pool.query(`UPDATE hosts SET last_seen_at = now() - interval '1 hour' WHERE host_id = $1`, [h.config.hostId]);
  const refused = await deleteTask(h, kept.taskId);
  expect(refused.status, JSON.stringify(refused.body)).toBe(503);
  const [deleteId] = await closedWorkflowIds(h.temporal, `WorkflowType = 'cleanupTask' AND TaskId = '${kept.taskId}'`);
  await record('cleanupTask-delete-refused-host-down', deleteId!);
  await h.pool.query(`UPDATE hosts SET last_seen_at = now() - interval '1 hour' WHERE host_id = $1`, [h.config.hostId]);
  expect((await h.api('GET', `/v1/tasks/${kept.taskId}/git-status`)).status).toBe(200);
  await record('observeGitStatus-host-down-last-observation', `git-status/${kept.session.taskEnvironmentId}`);
}

/** Idle release: the run that judges a host's workspaces, and the cleanup that releases one with its work saved. */
export async function recordIdleRelease(harness: MakeHarness): Promise<void> {
  const h = await harness();
  const record = (name: string, workflowId: string) => recordHistory(h.temporal, name, workflowId);
  const t = await taskWithSession(h, 'idle');
  expect((await h.api('POST', `/v1/sessions/${t.session.sessionId}/stop`)).status).toBe(200);
  writeFileSync(path.join(worktreeOf(h, t.taskId, 'idle'), 'unsaved.txt'), 'kept by the release\n');
  const res = await h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1 }, OPERATOR_TOKEN);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  // The release is carried out by the run itself (a batch); it closes once its job is done.
  const job = await jobOf(h, t.taskId);
  expect((await waitForJob(h, job.operation_id)).state).toBe('succeeded');
  const [runId] = await closedWorkflowIds(
    h.temporal,
    `WorkflowType = 'releaseIdleWorkspaces' AND TaskQueue = '${h.config.taskQueue}'`,
  );
  await record('releaseIdleWorkspaces-releases-idle-task', runId!);
}

/** Finishing a task [R8]: a preview, a push, a rebase, a merge, its undo, and a diff read through its host. */
export async function recordFinishingPaths(harness: MakeHarness): Promise<void> {
  const h = await harness();
  const record = (name: string, workflowId: string) => recordHistory(h.temporal, name, workflowId);
  const latest = async (type: string) => (await closedWorkflowIds(h.temporal, `WorkflowType = '${type}'`))[0]!;
  const w = await taskWithCommits(h, 'finishing', [{ 'a.txt': 'a\n' }]);

  expect((await finish(h, 'GET', `/v1/tasks/${w.taskId}/merge-preview?strategy=squash`)).status).toBe(200);
  await record('previewMerge-clean', await latest('previewMerge'));

  const bare = path.join(h.scratch, 'finishing-remote.git');
  mkdirSync(bare);
  git(bare, 'init', '-q', '--bare');
  expect(
    (await h.api('PATCH', `/v1/repositories/${w.repoId}`, { remote: `file://${bare}` }, OPERATOR_TOKEN)).status,
  ).toBe(200);
  expect((await h.api('POST', `/v1/tasks/${w.taskId}/push`, {})).status).toBe(200);
  await record('pushRepositories-pushed', await latest('pushRepositories'));

  commitIn(w.repo, { 'other.txt': 'o\n' }, 'main moved');
  expect((await finish(h, 'POST', `/v1/tasks/${w.taskId}/rebase`, {})).status).toBe(200);
  await record('rebaseTask-rebased', await latest('rebaseTask'));

  const merged = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'merge' });
  expect(merged.status).toBe(200);
  await record('mergeTask-merged', mergeWorkflowId(w.taskId, merged.body.operationId));
  expect((await finish(h, 'POST', `/v1/merges/${merged.body.operationId}/undo`)).status).toBe(200);
  await record('undoMerge-undone', await latest('undoMerge'));

  const diff = await h.temporal.workflow.start('readTaskDiffOnHost', {
    taskQueue: h.config.taskQueue,
    workflowId: taskDiffWorkflowId(randomUUID()),
    args: [
      {
        hostId: h.config.hostId,
        request: {
          sources: [
            {
              repositoryId: w.repoId,
              sourcePath: w.repo,
              baseBranch: 'main',
              taskBranch: w.branch,
              worktreePath: w.worktree,
              savedCommits: [],
            },
          ],
          patch: true,
          maxBytes: 100_000,
          maxFiles: 100,
        },
      },
    ],
  });
  await diff.result();
  await record('readTaskDiffOnHost-read', diff.workflowId);
}

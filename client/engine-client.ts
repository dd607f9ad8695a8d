/**
 * Every workflow the gateway and the operator CLI start or talk to, in one module: launches and
 * resumes (and their typed outcomes), stops, cleanups (start, cancel, continue, retry), git
 * status observations and orphan sweeps. Routes and the CLI never build workflow options.
 */
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import { ACTIVE_JOB_STATES, type CancelRequest, type CleanupInput, type CleanupJobState, type CleanupTrigger } from '../domain/cleanup';
import { continuationStart, type ContinuedJob } from '../domain/cleanup-continuation';
import type { Config } from '../domain/config';
import type { ErrorCode } from '../domain/errors';
import type { LaunchRequest, LaunchResult } from '../domain/launch';
import { ExecutorTypeAttr, SessionIdAttr, TaskIdAttr, TriggerAttr } from '../domain/search-attributes';
import { agentLogWorkflowId, boardDeleteWorkflowId, cascadeWorkflowId, cleanupWorkflowId, gitStatusWorkflowId, hostTaskQueue, launchWorkflowId, orphanSweepWorkflowId, repositoryCheckWorkflowId, resumeWorkflowId, stopWorkflowId } from '../domain/workflow-ids';
import type { RepositoryCheck } from '../git/repository-check';
import type { boardDelete, checkRepositoryOnHost, readAgentLogOnHost, launchSession, observeGitStatus, orphanSweep, resumeSession, stopSession } from '../workflows';
import { awaitBoardPreparedUpdate, awaitPreparedUpdate, cancelUpdate, operatorRetrySignal } from '../workflows/cleanup-messages';
import type { ResumeInput } from '../workflows/resume-session';
import { typedRefusalOf } from './typed-outcome';
import type { LogRead } from '../activities/agent-log-read';
import type { LogSource } from './agent-log';
import { ApiError } from './gateway/api-error';

export type LaunchOutcome = { ok: true; result: LaunchResult } | { ok: false; code: ErrorCode; details: Record<string, unknown> };

/**
 * Where a launch or resume starts: on the queue of the task's host (client/gateway/placement.ts),
 * so its host steps are local activities of that host's worker. Eagerly where that host is this
 * gateway's and this process runs a worker on its queue on its client's connection
 * (TWS_GATEWAY_RUNS_LAUNCHES): it starts here at once. Any other host's worker takes it from its queue.
 */
export function onHost(config: Pick<Config, 'taskQueue' | 'hostId' | 'gatewayRunsLaunches'>, hostId: string) {
  return { taskQueue: hostTaskQueue(config.taskQueue, hostId), requestEagerStart: config.gatewayRunsLaunches && hostId === config.hostId };
}

/**
 * A run of this id that already exists is this request's run: started by an earlier request
 * with the same Idempotency-Key (closed or still running), or by a concurrent one. A closed one
 * is never started again (REJECT_DUPLICATE): its outcome is the answer. Null when the engine no
 * longer holds it (past retention): the caller reads the session row instead.
 */
async function startOrJoin<T>(client: Client, workflowId: string, start: () => Promise<T>): Promise<T | null> {
  try {
    return await start();
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    try {
      return (await client.workflow.getHandle(workflowId).result()) as T;
    } catch (joined) {
      if (joined instanceof WorkflowNotFoundError) return null;
      throw joined;
    }
  }
}

/** How long an asynchronous launch waits for its admission before it answers 202 anyway (the session then tells it). */
const ADMISSION_WAIT_MS = 30_000;

/**
 * `Prefer: respond-async`: the run is started (or joined) and the answer comes once it is
 * admitted (`admitted()` reads that from the records), or at once with its refusal. A run
 * slower than the bound is answered as admitted-pending: the session tells the outcome.
 */
async function untilAdmitted(client: Client, workflowId: string, admitted: () => Promise<boolean>): Promise<AsyncOutcome> {
  // How the run ended, once it has: a typed refusal is the answer; any other end is told by the session.
  const ended: { outcome?: AsyncOutcome } = {};
  void client.workflow
    .getHandle(workflowId)
    .result()
    .then(
      () => (ended.outcome = { ok: true }),
      (err: unknown) => {
        const refusal = typedRefusalOf(err);
        ended.outcome = refusal ? { ok: false, ...refusal } : { ok: true };
      },
    );
  const deadline = Date.now() + ADMISSION_WAIT_MS;
  for (let wait = 10; Date.now() < deadline; wait = Math.min(wait * 2, 200)) {
    if (await admitted()) return { ok: true };
    if (ended.outcome) return ended.outcome;
    await new Promise((r) => setTimeout(r, wait));
  }
  return { ok: true };
}

export type AsyncOutcome = { ok: true } | { ok: false; code: ErrorCode; details: Record<string, unknown> };

function launchStart(config: Config, req: Omit<LaunchRequest, 'sharedQueue'>) {
  return {
    workflowId: launchWorkflowId(req.sessionId),
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    ...onHost(config, req.hostId),
    args: [{ ...req, sharedQueue: config.taskQueue }] as [LaunchRequest],
    typedSearchAttributes: new TypedSearchAttributes([
      { key: TaskIdAttr, value: req.taskId },
      { key: SessionIdAttr, value: req.sessionId },
      { key: ExecutorTypeAttr, value: req.executorType },
    ]),
  };
}

/** Starts a run unless one of its id exists already (an earlier request with the same key): that one is joined. */
async function startOnce(start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

export async function runLaunch(client: Client, config: Config, req: Omit<LaunchRequest, 'sharedQueue'>): Promise<LaunchOutcome | null> {
  const options = launchStart(config, req);
  return outcomeOf(client, options.workflowId, () => client.workflow.execute<typeof launchSession>('launchSession', options));
}

/** A run's typed outcome: its result, its refusal, or null when the engine no longer holds the run it joined. */
async function outcomeOf(client: Client, workflowId: string, execute: () => Promise<LaunchResult>): Promise<LaunchOutcome | null> {
  try {
    const result = await startOrJoin(client, workflowId, execute);
    return result === null ? null : { ok: true, result };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/** A launch answered once admitted (`Prefer: respond-async`). */
export async function startLaunch(client: Client, config: Config, req: Omit<LaunchRequest, 'sharedQueue'>, admitted: () => Promise<boolean>): Promise<AsyncOutcome> {
  const options = launchStart(config, req);
  await startOnce(() => client.workflow.start<typeof launchSession>('launchSession', options));
  return untilAdmitted(client, options.workflowId, admitted);
}

/** resume/<sessionId>/<run>: the run is the request's own (an Idempotency-Key derives it), so a retry joins the same run. */
function resumeStart(config: Config, session: { id: string; taskId: string; executorType: string; hostId: string }, runId: string, extra: { args?: string[]; env?: Record<string, string>; prompt?: string | null }) {
  return {
    workflowId: resumeWorkflowId(session.id, runId),
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    // Where a launch starts: its host steps run as local activities there.
    ...onHost(config, session.hostId),
    args: [{ sessionId: session.id, runId, hostId: session.hostId, sharedQueue: config.taskQueue, ...extra }] as [ResumeInput],
    // Found in the Temporal UI the way launches are: by task, session and executor.
    typedSearchAttributes: new TypedSearchAttributes([
      { key: TaskIdAttr, value: session.taskId },
      { key: SessionIdAttr, value: session.id },
      { key: ExecutorTypeAttr, value: session.executorType },
    ]),
  };
}

export async function runResume(
  client: Client,
  config: Config,
  session: { id: string; taskId: string; executorType: string; hostId: string },
  runId: string,
  extra: { args?: string[]; env?: Record<string, string>; prompt?: string | null } = {},
): Promise<LaunchOutcome | null> {
  const options = resumeStart(config, session, runId, extra);
  return outcomeOf(client, options.workflowId, () => client.workflow.execute<typeof resumeSession>('resumeSession', options));
}

/** A resume answered once admitted (`Prefer: respond-async`). */
export async function startResume(
  client: Client,
  config: Config,
  session: { id: string; taskId: string; executorType: string; hostId: string },
  runId: string,
  extra: { args?: string[]; env?: Record<string, string>; prompt?: string | null },
  admitted: () => Promise<boolean>,
): Promise<AsyncOutcome> {
  const options = resumeStart(config, session, runId, extra);
  await startOnce(() => client.workflow.start<typeof resumeSession>('resumeSession', options));
  return untilAdmitted(client, options.workflowId, admitted);
}

/**
 * Stopping or deleting a session still starting cancels its run (Temporal cancellation): the
 * run undoes what it made (a cancellation that arrives once its agent runs lets it finish; the
 * stop then stops that agent). Waits for the run to end, at most `boundMs`.
 */
export async function cancelStartingRun(client: Client, workflowId: string, boundMs = 60_000): Promise<void> {
  const handle = client.workflow.getHandle(workflowId);
  try {
    await handle.cancel();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return; // ended and gone
    throw err;
  }
  await Promise.race([handle.result().catch(() => undefined), new Promise((r) => setTimeout(r, boundMs))]);
}

export interface LaunchRunOutcome {
  taskId: string;
  executorType: string;
  agentProfile: string;
  /** starting: not admitted yet; failed / cancelled: it left no session row. */
  state: 'starting' | 'failed' | 'cancelled';
  error: { code: ErrorCode; reason?: string } | null;
}

/**
 * What the launch run of a session with no row says: still running (before its admission), or
 * failed with its typed refusal, or cancelled. Null when there is no such run, or it completed
 * (the session was deleted since).
 */
export async function launchRunOutcome(client: Client, sessionId: string): Promise<LaunchRunOutcome | null> {
  const handle = client.workflow.getHandle<typeof launchSession>(launchWorkflowId(sessionId));
  let description;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
  const status = description.status.name;
  if (status === 'COMPLETED') return null;
  const base = {
    taskId: String(description.typedSearchAttributes.get(TaskIdAttr) ?? ''),
    executorType: String(description.typedSearchAttributes.get(ExecutorTypeAttr) ?? ''),
    agentProfile: '',
  };
  if (status === 'RUNNING') return { ...base, state: 'starting', error: null };
  if (status === 'CANCELLED') return { ...base, state: 'cancelled', error: { code: 'launch_cancelled' } };
  const refusal = await handle.result().then(() => null, (err: unknown) => typedRefusalOf(err));
  const code: ErrorCode = refusal?.code ?? 'internal';
  const reason = typeof refusal?.details.reason === 'string' ? refusal.details.reason : typeof refusal?.details.problem === 'string' ? refusal.details.problem : undefined;
  return { ...base, state: code === 'launch_cancelled' ? 'cancelled' : 'failed', error: { code, ...(reason ? { reason } : {}) } };
}

export type CleanupStart = { ok: true; operationId: string; workflowId: string } | { ok: false; code: ErrorCode; details: Record<string, unknown> };

/**
 * Starts the cleanup workflow and returns once its preparation committed (barrier, snapshot,
 * task mutation), so the caller's 202 means the task is already archived or deleted [R6.3].
 */
export async function startCleanup(client: Client, config: Config, req: { taskId: string; trigger: CleanupTrigger; discardChanges?: boolean; cascade?: boolean }): Promise<CleanupStart> {
  const operationId = randomUUID();
  const searchAttributes = new TypedSearchAttributes([
    { key: TaskIdAttr, value: req.taskId },
    { key: TriggerAttr, value: req.trigger },
  ]);
  const common = { taskQueue: config.taskQueue, typedSearchAttributes: searchAttributes };
  const workflowId = req.cascade ? cascadeWorkflowId(req.trigger, req.taskId, operationId) : cleanupWorkflowId(req.trigger, req.taskId, operationId);
  const args = req.cascade
    ? [{ rootTaskId: req.taskId, operationId, trigger: req.trigger, discardChanges: req.discardChanges ?? false, policy: config.cleanupPolicy }]
    : [{ operationId, taskId: req.taskId, trigger: req.trigger, discardChanges: req.discardChanges ?? false, policy: config.cleanupPolicy, alreadyPrepared: false } satisfies CleanupInput];
  // Update-with-start: the start and the wait for preparation are one request, so even a
  // refusal that ends the workflow at once reaches the caller as the update's typed failure.
  const startWorkflowOperation = new WithStartWorkflowOperation(req.cascade ? 'cascadeCleanup' : 'cleanupTask', {
    ...common,
    workflowId,
    args,
    workflowIdConflictPolicy: 'FAIL',
  });
  try {
    await client.workflow.executeUpdateWithStart(awaitPreparedUpdate, { startWorkflowOperation });
    return { ok: true, operationId, workflowId };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

export type BoardDeleteStart = { ok: true; operationId: string; workflowId: string; operations: { taskId: string; operationId: string }[] } | { ok: false; code: ErrorCode; details: Record<string, unknown> };

/**
 * Starts the delete of a board and returns once its one preparation transaction committed
 * (every task's barrier, snapshot and deletion, and the board's), with one operation per task;
 * or its typed refusal (a dirty worktree without consent), nothing changed.
 */
export async function startBoardDelete(client: Client, config: Config, req: { boardId: string; discardChanges: boolean }): Promise<BoardDeleteStart> {
  const operationId = randomUUID();
  const workflowId = boardDeleteWorkflowId(req.boardId, operationId);
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof boardDelete>('boardDelete', {
    taskQueue: config.taskQueue,
    typedSearchAttributes: new TypedSearchAttributes([{ key: TriggerAttr, value: 'board_delete' }]),
    workflowId,
    args: [{ boardId: req.boardId, operationId, discardChanges: req.discardChanges, policy: config.cleanupPolicy }],
    workflowIdConflictPolicy: 'FAIL',
  });
  try {
    const prepared = await client.workflow.executeUpdateWithStart(awaitBoardPreparedUpdate, { startWorkflowOperation });
    return { ok: true, operationId, workflowId, operations: prepared.operations };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/**
 * Unarchive, the operator's cancel and the abandonment of a reset: cancels a waiting cleanup and
 * waits for one in flight; returns its final state. A job whose run was lost (closed while the
 * job is active) gets a new run with the cancel as its first message, so it ends before any
 * attempt. A typed refusal (an abandonment while an agent runs) is returned, not thrown.
 */
export async function cancelCleanup(client: Client, config: Config, job: ContinuedJob, req: CancelRequest = {}): Promise<{ ok: true; state: string } | { ok: false; code: ErrorCode; details: Record<string, unknown> }> {
  const startWorkflowOperation = new WithStartWorkflowOperation('cleanupTask', { ...continuationStart(job, config.taskQueue, config.cleanupPolicy), workflowIdConflictPolicy: 'USE_EXISTING' });
  try {
    return { ok: true, state: (await client.workflow.executeUpdateWithStart(cancelUpdate, { startWorkflowOperation, args: [req] })).state };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/**
 * An abandonment with no job active: a job of its own (trigger `environment_abandon`), whose
 * preparation refuses while an agent runs; returns once it ended, with its state.
 */
export async function abandonEnvironment(client: Client, config: Config, taskId: string): Promise<CleanupStart & { state?: string }> {
  const started = await startCleanup(client, config, { taskId, trigger: 'environment_abandon' });
  if (!started.ok) return started;
  try {
    const progress = await client.workflow.getHandle(started.workflowId).result();
    return { ...started, state: (progress as { state: string }).state };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/**
 * The operator's cancel (route and CLI): a job that has ended is refused `cleanup_job_finished`,
 * and so is one whose attempt in flight finished it first (nothing was cancelled).
 */
export async function operatorCancel(client: Client, config: Config, job: ContinuedJob & { state: CleanupJobState }): Promise<{ ok: true; state: string } | { ok: false; code: ErrorCode; details: Record<string, unknown> }> {
  if (!ACTIVE_JOB_STATES.includes(job.state)) return { ok: false, code: 'cleanup_job_finished', details: {} };
  const ended = await cancelCleanup(client, config, job, { by: 'operator' });
  if (ended.ok && ended.state !== 'cancelled') return { ok: false, code: 'cleanup_job_finished', details: {} };
  return ended;
}

export async function retryCleanup(client: Client, workflowId: string): Promise<void> {
  await client.workflow.getHandle(workflowId).signal(operatorRetrySignal);
}

/**
 * A job still active whose workflow closed (lost, terminated) gets a new run from its snapshot,
 * so an operator's retry or an unarchive reaches a running workflow. False when its workflow runs.
 */
export async function continueIfClosed(client: Client, config: Config, job: ContinuedJob): Promise<boolean> {
  try {
    if ((await client.workflow.getHandle(job.workflowId).describe()).status.name === 'RUNNING') return false;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  await startPreparedJob(client, config, job);
  return true;
}

/**
 * Starts the run of a job whose row is prepared (it has its snapshot): a job continued after its
 * run was lost, or a follow-up reserved in its trigger's transaction. False when a run of its id
 * was started already (by another caller meanwhile).
 */
export async function startPreparedJob(client: Client, config: Pick<Config, 'taskQueue' | 'cleanupPolicy'>, job: ContinuedJob): Promise<boolean> {
  try {
    await client.workflow.start('cleanupTask', continuationStart(job, config.taskQueue, config.cleanupPolicy));
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/**
 * Starts the follow-up jobs a change reserved in its transaction (`borrow_ended`). A start that
 * fails is reported to `lost` and left: the job row is committed, and the consistency check
 * starts a `pending` job that has no run.
 */
export async function startFollowUps(client: Client, config: Pick<Config, 'taskQueue' | 'cleanupPolicy'>, jobs: ContinuedJob[], lost: (job: ContinuedJob, err: unknown) => void): Promise<void> {
  for (const job of jobs) await startPreparedJob(client, config, job).catch((err: unknown) => lost(job, err));
}

/** stop/<sessionId>/<operationId>: stops the session's agents and marks it stopped. */
export async function runStop(client: Client, config: Config, sessionId: string): Promise<void> {
  await client.workflow.execute<typeof stopSession>('stopSession', {
    workflowId: stopWorkflowId(sessionId, randomUUID()),
    taskQueue: config.taskQueue,
    args: [sessionId],
    typedSearchAttributes: new TypedSearchAttributes([{ key: SessionIdAttr, value: sessionId }]),
  });
}

/** git-status/<environmentId>: concurrent readers of one environment share one observation run. */
export async function observeGitStatusOf(client: Client, config: Config, environmentId: string) {
  return client.workflow.execute<typeof observeGitStatus>('observeGitStatus', {
    workflowId: gitStatusWorkflowId(environmentId),
    taskQueue: config.taskQueue,
    args: [environmentId],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}

/** orphan-sweep/<runId>: an operator's sweep of this host's workspace root. */
export async function runOrphanSweep(client: Client, config: Config, hostId: string, dryRun: boolean) {
  return client.workflow.execute<typeof orphanSweep>('orphanSweep', {
    workflowId: orphanSweepWorkflowId(randomUUID()),
    taskQueue: config.taskQueue,
    args: [{ hostId, graceMs: config.orphanGraceMs, dryRun }],
  });
}

/** A repository's checks on the host that is to hold it; `host_unavailable` when that host does not answer. */
export async function checkRepositoryOn(client: Client, config: Config, hostId: string, input: { path: string; defaultBranch?: string }): Promise<RepositoryCheck | { ok: false; code: ErrorCode }> {
  try {
    return await client.workflow.execute<typeof checkRepositoryOnHost>('checkRepositoryOnHost', {
      workflowId: repositoryCheckWorkflowId(randomUUID()),
      taskQueue: config.taskQueue,
      args: [{ hostId, ...input }],
    });
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, code: refusal.code };
    throw err;
  }
}

/**
 * An agent's log where it lives, on its host (for a gateway that is not that host): a source the
 * log route tails and follows. A host that does not answer: `host_unavailable`.
 */
export function logOnHost(client: Client, config: Config, hostId: string, logPath: string): LogSource {
  const read = async (input: Omit<LogRead, 'logPath'>) => {
    try {
      const answer = await client.workflow.execute<typeof readAgentLogOnHost>('readAgentLogOnHost', {
        workflowId: agentLogWorkflowId(randomUUID()),
        taskQueue: config.taskQueue,
        args: [{ hostId, logPath, ...input }],
      });
      return { chunk: Buffer.from(answer.base64, 'base64'), offset: answer.offset };
    } catch (err) {
      const refusal = typedRefusalOf(err);
      if (refusal) throw new ApiError(refusal.code);
      throw err;
    }
  };
  return {
    tail: async (lines) => {
      const { chunk, offset } = await read({ lines });
      return { text: chunk, offset };
    },
    since: (offset) => read({ since: offset }),
  };
}

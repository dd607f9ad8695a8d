/**
 * The session workflows the gateway starts or talks to: launches and resumes (and their typed
 * outcomes), their cancellation, stops. Cleanups are in engine-cleanup.ts, questions to a host in
 * engine-hosts.ts. Routes and the CLI never build workflow options.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import type { Config } from '../../../domain/config';
import type { ErrorCode } from '../../../domain/errors';
import type { LaunchRequest, LaunchResult } from '../../../domain/launch';
import { ExecutorTypeAttr, SessionIdAttr, TaskIdAttr } from '../../../domain/search-attributes';
import { hostTaskQueue, launchWorkflowId, resumeWorkflowId, stopWorkflowId } from '../../../domain/workflow-ids';
import type { launchSession, resumeSession, stopSession } from '../../../workflows';
import type { ResumeInput } from '../../../workflows/resume-session';
import { typedRefusalOf } from './typed-outcome';

export type LaunchOutcome =
  { ok: true; result: LaunchResult } | { ok: false; code: ErrorCode; details: Record<string, unknown> };

/**
 * Where a launch or resume starts: on the queue of the task's host (client/gateway/placement.ts),
 * so its host steps are local activities of that host's worker. Eagerly where that host is this
 * gateway's and this process runs a worker on its queue on its client's connection
 * (TWS_GATEWAY_RUNS_LAUNCHES): it starts here at once. Any other host's worker takes it from its queue.
 */
function onHost(
  config: Pick<Config, 'taskQueue' | 'hostId' | 'gatewayRunsLaunches' | 'workflowTaskTimeoutMs'>,
  hostId: string,
) {
  return {
    taskQueue: hostTaskQueue(config.taskQueue, hostId),
    requestEagerStart: config.gatewayRunsLaunches && hostId === config.hostId,
    // A launch whose process died is run again by another worker after this (TWS_WORKFLOW_TASK_TIMEOUT_MS).
    workflowTaskTimeout: config.workflowTaskTimeoutMs,
  };
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
async function untilAdmitted(
  client: Client,
  workflowId: string,
  admitted: () => Promise<boolean>,
): Promise<AsyncOutcome> {
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

export async function runLaunch(
  client: Client,
  config: Config,
  req: Omit<LaunchRequest, 'sharedQueue'>,
): Promise<LaunchOutcome | null> {
  const options = launchStart(config, req);
  return outcomeOf(client, options.workflowId, () =>
    client.workflow.execute<typeof launchSession>('launchSession', options),
  );
}

/** A run's typed outcome: its result, its refusal, or null when the engine no longer holds the run it joined. */
async function outcomeOf(
  client: Client,
  workflowId: string,
  execute: () => Promise<LaunchResult>,
): Promise<LaunchOutcome | null> {
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
export async function startLaunch(
  client: Client,
  config: Config,
  req: Omit<LaunchRequest, 'sharedQueue'>,
  admitted: () => Promise<boolean>,
): Promise<AsyncOutcome> {
  const options = launchStart(config, req);
  await startOnce(() => client.workflow.start<typeof launchSession>('launchSession', options));
  return untilAdmitted(client, options.workflowId, admitted);
}

/** resume/<sessionId>/<run>: the run is the request's own (an Idempotency-Key derives it), so a retry joins the same run. */
function resumeStart(
  config: Config,
  session: { id: string; taskId: string; executorType: string; hostId: string },
  runId: string,
  extra: { args?: string[]; env?: Record<string, string>; prompt?: string | null },
) {
  return {
    workflowId: resumeWorkflowId(session.id, runId),
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    // Where a launch starts: its host steps run as local activities there.
    ...onHost(config, session.hostId),
    args: [{ sessionId: session.id, runId, hostId: session.hostId, sharedQueue: config.taskQueue, ...extra }] as [
      ResumeInput,
    ],
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
  return outcomeOf(client, options.workflowId, () =>
    client.workflow.execute<typeof resumeSession>('resumeSession', options),
  );
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
  // Only its end is awaited here: a cancelled run fails by design, and how it ended is read from
  // the session's rows by the caller (the stop after it acts on what is recorded).
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
  return runOutcomeOf(client, launchWorkflowId(sessionId));
}

/** The same for any launch or resume run of a session (a failed resume's error). */
export async function runOutcomeOf(client: Client, workflowId: string): Promise<LaunchRunOutcome | null> {
  const handle = client.workflow.getHandle<typeof launchSession>(workflowId);
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
  const refusal = await handle.result().then(
    () => null,
    (err: unknown) => typedRefusalOf(err),
  );
  const code: ErrorCode = refusal?.code ?? 'internal';
  const reason =
    typeof refusal?.details.reason === 'string'
      ? refusal.details.reason
      : typeof refusal?.details.problem === 'string'
        ? refusal.details.problem
        : undefined;
  return {
    ...base,
    state: code === 'launch_cancelled' ? 'cancelled' : 'failed',
    error: { code, ...(reason ? { reason } : {}) },
  };
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

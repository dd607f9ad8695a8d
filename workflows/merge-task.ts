/**
 * merge/<taskId>/<operationId>: a task's branches merged into their bases, all or nothing [R8.3].
 *
 * 1. the operation's row (another merge, rebase or undo of the task refuses `merge_in_progress`);
 * 2. running agents refuse, or are stopped when asked; uncommitted work refuses, or is committed when asked;
 * 3. every repository is planned (its commits made, no ref moved) and the plan recorded;
 * 4. each base moves from the plan's commit by compare-and-set, in turn with every other merge of
 *    that repository; a base that moved meanwhile puts back the ones this merge moved and plans again;
 * 5. the outcome recorded; asked to, the task is archived by a cleanup of its own.
 * A refusal ends the operation `refused` with its error; no base moved then.
 */
import { uuid4, executeChild, ApplicationFailure } from '@temporalio/workflow';
import type { RetryPolicy } from '../domain/cleanup';
import { isErrorCode, type ErrorCode } from '../domain/errors';
import type { MergeStrategy, RepositoryMerged, RepositoryPlan, TaskRepositorySource } from '../domain/merge';
import { mergeMessage, strategyAllowed } from '../domain/merge';
import { stopWorkflowId } from '../domain/workflow-ids';
import { mergeHostSteps, recordSteps } from './activity-proxies';
import { archiveTask, pushBases } from './merge-after';

const records = recordSteps();

/** The operator's heartbeat timeout (TWS_STEP_HEARTBEAT_TIMEOUT_MS, in the policy a merge carries): a dead host is noticed as soon. */
let heartbeatTimeoutMs: number | undefined;
const hostSteps = (hostId: string) => mergeHostSteps(hostId, heartbeatTimeoutMs);

/** How many times a merge plans again because a base moved under it before it gives up (refused, retry). */
const MAX_PLANS = 20;

export interface MergeInput {
  operationId: string;
  taskId: string;
  strategy: MergeStrategy;
  message?: string;
  repositoryIds?: string[];
  commitUncommitted?: boolean;
  stopAgents?: boolean;
  archive?: boolean;
  /** Push each moved base to its repository's remote once merged (a failed push leaves the merge merged, and says so). */
  push?: boolean;
  idempotencyKey?: string | null;
  /** The cleanup policy of an archive asked for in the same operation. */
  cleanupPolicy: RetryPolicy;
}

export interface MergeOutcome {
  state: 'merged' | 'refused' | 'needs_operator';
  repositories: RepositoryMerged[];
  error?: { code: ErrorCode } & Record<string, unknown>;
}

class Refused extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly details: Record<string, unknown> = {},
  ) {
    super(code);
  }
}

export async function mergeTask(input: MergeInput): Promise<MergeOutcome> {
  heartbeatTimeoutMs = input.cleanupPolicy.heartbeatTimeoutMs;
  // 1.
  const begun = await records.beginMerge({
    operationId: input.operationId,
    taskId: input.taskId,
    kind: 'merge',
    strategy: input.strategy,
    idempotencyKey: input.idempotencyKey ?? null,
    request: { ...input, cleanupPolicy: undefined },
  });
  let outcome: MergeOutcome;
  try {
    outcome = await carryOut(input, begun);
  } catch (err) {
    if (err instanceof NeedsOperator)
      outcome = {
        state: 'needs_operator',
        repositories: [],
        error: { code: 'internal', reason: 'base_not_put_back', repositories: err.report },
      };
    else {
      const refusal = refusalOf(err);
      // A step that failed for good (no outage: a fault) may have left a base moved: an operator looks.
      outcome = refusal
        ? { state: 'refused', repositories: [], error: { code: refusal.code, ...refusal.details } }
        : { state: 'needs_operator', repositories: [], error: { code: 'internal', reason: 'step_failed' } };
    }
  }
  if (outcome.state === 'merged' && input.push) outcome.repositories = await pushBases(input, outcome.repositories);
  await records.finishGitOperation({ operationId: input.operationId, ...outcome, error: outcome.error ?? null });
  if (outcome.state === 'merged' && input.archive) await archiveTask(input);
  return outcome;
}

type Begun = Awaited<ReturnType<typeof records.beginMerge>>;

async function carryOut(input: MergeInput, { facts, sources: all, since }: Begun): Promise<MergeOutcome> {
  const sources = all.filter((s) => !input.repositoryIds || input.repositoryIds.includes(s.repositoryId));
  if (sources.length === 0) throw new Refused('nothing_to_merge');
  if (sources.some((s) => !strategyAllowed(s.mergeStrategies, input.strategy)))
    throw new Refused('merge_strategy_not_allowed');
  const message = mergeMessage(input.message, facts.title, input.taskId);

  // 2.
  if (facts.activeSessions.length > 0) {
    if (!input.stopAgents || facts.activeSessions.some((s) => s.state === 'starting'))
      throw new Refused('session_running');
    for (const { sessionId } of facts.activeSessions)
      await executeChild('stopSession', { workflowId: stopWorkflowId(sessionId, uuid4()), args: [sessionId] });
  }
  const saved = facts.savedWorkRepositories.filter((id) => sources.some((s) => s.repositoryId === id));
  if (saved.length > 0) throw new Refused('task_uncommitted_changes', { repositoryIds: saved });
  if (sources.length === 1) return mergeOne(input, sources[0]!, since, message);
  const states = await Promise.all(sources.map((s) => hostSteps(s.hostId).inspectTaskRepositories([s])));
  const dirty = states
    .flat()
    .filter((s) => s.dirty)
    .map((s) => s.repositoryId);
  if (dirty.length > 0) {
    if (!input.commitUncommitted) throw new Refused('task_uncommitted_changes', { repositoryIds: dirty });
    for (const source of sources.filter((s) => dirty.includes(s.repositoryId)))
      await hostSteps(source.hostId).commitTaskWork({ source, message });
  }

  // 3. and 4.
  for (let round = 1; round <= MAX_PLANS; round++) {
    const plan = await planAll(input, sources, since, message);
    const recorded = await records.recordMergePlan({ operationId: input.operationId, plan, replace: round > 1 });
    const moved = await moveAll(recorded, input);
    if (moved === 'stale') continue;
    return {
      state: 'merged',
      repositories: recorded.map((p) => ({
        repositoryId: p.repositoryId,
        baseBranch: p.baseBranch,
        before: p.before,
        after: p.after,
      })),
    };
  }
  throw new Refused('merge_in_progress', { reason: 'base_kept_moving' });
}

/** One repository: planned and moved in one step, in turn with every other merge of its base (no plan goes stale). */
async function mergeOne(
  input: MergeInput,
  source: TaskRepositorySource,
  since: Record<string, string>,
  message: string,
): Promise<MergeOutcome> {
  const answer = await hostSteps(source.hostId).mergeOneRepository({
    operationId: input.operationId,
    source,
    strategy: input.strategy,
    since: since[source.repositoryId] ?? null,
    message,
    commitUncommitted: input.commitUncommitted ?? false,
    reason: `task-workspaces: merge of task ${input.taskId} (${input.strategy})`,
  });
  const repositoryId = source.repositoryId;
  switch (answer.kind) {
    case 'merged': {
      const p = answer.plan;
      return {
        state: 'merged',
        repositories: [{ repositoryId, baseBranch: p.baseBranch, before: p.before, after: p.after }],
      };
    }
    case 'uncommitted':
      throw new Refused('task_uncommitted_changes', { repositoryIds: [repositoryId] });
    case 'conflicts':
      throw new Refused('merge_conflict', { conflicts: [{ repositoryId, paths: answer.conflicts }] });
    case 'nothing':
      throw new Refused('nothing_to_merge');
    default:
      throw new Refused(answer.kind);
  }
}

/** Every repository planned before any base moves; the first refusal of any ends the merge. */
async function planAll(
  input: MergeInput,
  sources: TaskRepositorySource[],
  since: Record<string, string>,
  message: string,
): Promise<RepositoryPlan[]> {
  const answers = await Promise.all(
    sources.map((source) =>
      hostSteps(source.hostId).planMergeRepository({
        source,
        strategy: input.strategy,
        since: since[source.repositoryId] ?? null,
        message,
      }),
    ),
  );
  const conflicts = answers.flatMap((a) =>
    a.kind === 'conflicts' ? [{ repositoryId: a.repositoryId, paths: a.conflicts }] : [],
  );
  if (conflicts.length > 0) throw new Refused('merge_conflict', { conflicts });
  if (answers.some((a) => a.kind === 'not_fast_forward')) throw new Refused('not_fast_forward');
  if (answers.some((a) => a.kind === 'base_checkout_dirty')) throw new Refused('base_checkout_dirty');
  const plan = answers.flatMap((a) => (a.kind === 'planned' ? [a.plan] : []));
  if (plan.length === 0) throw new Refused('nothing_to_merge');
  return plan;
}

/**
 * Each base moved in turn. One that cannot move puts back those this merge moved, newest first,
 * by compare-and-set: `stale` (plan again) or a refusal. A put-back that is impossible (a commit
 * landed on a base meanwhile) leaves the operation to an operator, with each repository's state.
 */
async function moveAll(plan: RepositoryPlan[], input: MergeInput): Promise<'moved' | 'stale'> {
  const reason = `task-workspaces: merge of task ${input.taskId} (${input.strategy})`;
  const moved: RepositoryPlan[] = [];
  for (const p of plan) {
    let answer: 'moved' | 'stale' | 'base_checkout_dirty';
    try {
      answer = await hostSteps(p.hostId).moveBase({ plan: p, reason });
    } catch (err) {
      if (refusalOf(err)?.code !== 'base_checkout_dirty') throw err;
      answer = 'base_checkout_dirty';
    }
    if (answer === 'moved') {
      moved.push(p);
      continue;
    }
    await putBack(moved, plan, input);
    if (answer === 'stale') return 'stale';
    throw new Refused('base_checkout_dirty');
  }
  return 'moved';
}

async function putBack(moved: RepositoryPlan[], plan: RepositoryPlan[], input: MergeInput): Promise<void> {
  const reason = `task-workspaces: merge of task ${input.taskId} put back`;
  const impossible: string[] = [];
  for (const p of [...moved].reverse())
    if ((await hostSteps(p.hostId).putBackBase({ plan: p, reason })) === 'impossible') impossible.push(p.repositoryId);
  if (impossible.length === 0) return;
  const report = plan.map((p) => ({
    repositoryId: p.repositoryId,
    baseBranch: p.baseBranch,
    state: impossible.includes(p.repositoryId) ? 'moved_not_put_back' : moved.includes(p) ? 'put_back' : 'not_moved',
    before: p.before,
    after: p.after,
  }));
  throw new NeedsOperator(report);
}

class NeedsOperator extends Error {
  constructor(readonly report: Record<string, unknown>[]) {
    super('needs_operator');
  }
}

function refusalOf(err: unknown): Refused | null {
  if (err instanceof Refused) return err;
  if (err instanceof NeedsOperator) return null;
  for (let cur: unknown = err; cur instanceof Error; cur = (cur as { cause?: unknown }).cause)
    if (cur instanceof ApplicationFailure && isErrorCode(cur.type))
      return new Refused(cur.type as ErrorCode, (cur.details?.[0] as Record<string, unknown>) ?? {});
  return null;
}

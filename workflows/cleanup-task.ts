/**
 * cleanup/<trigger>/<taskId>/<operationId>: prepare (barrier → snapshot → mutate) → attempts on
 * a bounded schedule of durable timers → `needs_operator`, where it waits for an operator retry.
 * A refusal no retry can fix (the audit's) waits for the operator at once. The `cancel` update
 * ends a waiting job; with `abandon` on a reset, the inventory is abandoned between attempts.
 * An `environment_abandon` job runs no attempt: it only abandons. The job row and this workflow
 * tell the same story (the progress query, the Phase attribute).
 */
import type { ApplicationFailure } from '@temporalio/workflow';
import { allHandlersFinished, condition, patched, setHandler, sleep } from '@temporalio/workflow';
import {
  abandonsOnly,
  removesTask,
  waitAfterAttempt,
  waitsForOperatorAtOnce,
  type CancelRequest,
  type CleanupInput,
  type CleanupJobState,
  type CleanupProgress,
} from '../domain/cleanup';
import { cleanupHosts, type CancelledBy, type CleanupSnapshot } from '../domain/cleanup-snapshot';
import { hostSteps, recordSteps } from './activity-proxies';
import { cleanupAttempt } from './cleanup-attempt';
import {
  BATCH_HOLD_CHECK_EVERY,
  cancelledReport,
  classify,
  dirtyWorktreeRefusal,
  hostBackEndsWait,
  hostDownRefusal,
  initialProgress,
  preparationRequest,
} from './cleanup-task-steps';
import { setPhase } from './phase';
import {
  awaitPreparedUpdate,
  cancelUpdate,
  hostBackSignal,
  operatorRetrySignal,
  progressQuery,
} from './cleanup-messages';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

export async function cleanupTask(input: CleanupInput): Promise<CleanupProgress> {
  const progress = initialProgress(input);
  let prepared = false;
  let refusal: ApplicationFailure | null = null;
  let retryRequested = false;
  let cancelRequested = false;
  let cancelledBy: CancelledBy = 'workflow_message';
  let settled = false;
  // An abandonment holds attempts off while it runs, and waits for one in flight to end first.
  let holdAttempts = false;
  let attemptInFlight = false;
  // The abandonment recorded the job's end itself (in its one transaction).
  let abandoned = false;
  let snapshot: CleanupSnapshot | null = null;

  const phase = (p: string) => {
    progress.phase = p;
    setPhase(p);
  };
  setHandler(progressQuery, () => progress);
  setHandler(awaitPreparedUpdate, async () => {
    await condition(() => prepared || refusal !== null);
    if (refusal) throw refusal;
    return { operationId: input.operationId };
  });
  setHandler(operatorRetrySignal, () => {
    if (progress.state === 'needs_operator') retryRequested = true;
  });
  let hostBack = false;
  setHandler(hostBackSignal, (hostId: string) => {
    if (hostBackEndsWait(progress, snapshot, hostId)) hostBack = true;
  });
  setHandler(cancelUpdate, async (req?: CancelRequest) => {
    const by = req?.by ?? 'workflow_message';
    // A preparation that was refused prepared no job: the cancel answers at once that there is
    // none to end, instead of waiting for a settlement that never comes.
    const answersRefusal = patched('cancel-answers-a-refused-preparation');
    const refused = () => answersRefusal && refusal !== null;
    if (req?.abandon && input.trigger === 'environment_reset') {
      // Held from the first moment: a new run of a lost job abandons before any attempt.
      holdAttempts = true;
      await condition(() => prepared || refused());
      if (refused()) return { state: 'refused' };
      if (!settled) await abandonBetweenAttempts(by);
    }
    // A pending cleanup stops at once; one in flight finishes its attempt first.
    if (!settled && !cancelRequested) {
      cancelRequested = true;
      cancelledBy = by;
    }
    await condition(() => settled || refused());
    return { state: refused() ? 'refused' : progress.state };
  });

  /**
   * The operator abandons a reset's workspace: no attempt runs meanwhile; in one transaction the
   * inventory becomes `abandoned`, the environment `released` and the job `cancelled` (a running
   * agent of the environment refuses it, changing nothing, and the job goes on as it was).
   */
  const abandonBetweenAttempts = async (by: CancelledBy) => {
    holdAttempts = true;
    try {
      await condition(() => settled || !attemptInFlight);
      if (settled) return;
      progress.report = await records.abandonEnvironment({
        operationId: input.operationId,
        snapshot: snapshot!,
        report: progress.report,
        attempts: progress.attempts,
        state: 'cancelled',
        by,
      });
      abandoned = true;
      cancelRequested = true;
      cancelledBy = by;
    } catch (err) {
      throw asTypedFailure(err);
    } finally {
      holdAttempts = false;
    }
  };

  // What the job row records of the job's progress, with each state it moves to.
  const recorded = () => ({ attempts: progress.attempts, lastError: progress.lastError, report: progress.report });
  const record = async (state: CleanupJobState, nextAttemptInMs: number | null = null) => {
    progress.state = state;
    await records.recordCleanupState(input.operationId, { state, nextAttemptInMs, ...recorded() });
  };

  // A bulk cleanup's batch may be carrying this job out (this run is then the consistency
  // check's, or an operator's cancel's): it waits for the batch to finish the job or let it go.
  if (input.alreadyPrepared && patched('job-waits-for-its-batch')) {
    for (;;) {
      const hold = await records.batchHold(input.operationId);
      if (hold.kind === 'free') break;
      if (hold.kind === 'ended') {
        Object.assign(progress, hold.progress);
        prepared = true;
        settled = true;
        phase(progress.state);
        await condition(allHandlersFinished);
        return progress;
      }
      await sleep(BATCH_HOLD_CHECK_EVERY);
    }
  }

  // Preparation. A delete without consent is refused before any change if a worktree is dirty.
  try {
    if (input.alreadyPrepared && patched('prepared-job-attempts')) {
      // A cascade's member, or a new run of a job whose run was lost: it counts on from the job.
      const job = await records.loadPreparedJob(input.operationId);
      snapshot = job.snapshot;
      progress.attempts = job.attempts;
    } else if (input.alreadyPrepared) {
      snapshot = await records.loadSnapshot(input.operationId);
    } else {
      if (removesTask(input.trigger) && input.trigger === 'delete' && !input.discardChanges) {
        const preview = await records.previewWorktrees(input.taskId);
        // A host that is down cannot say whether its worktrees are dirty: refused at once
        // (host_unavailable, nothing changed) rather than waiting minutes on its queue.
        if (
          preview.hostId &&
          preview.worktrees.length > 0 &&
          patched('dirty-check-waits-for-no-down-host') &&
          (await records.hostIsDown(preview.hostId))
        )
          throw hostDownRefusal();
        const dirty = preview.hostId ? await hostSteps(preview.hostId).findDirtyWorktrees(preview.worktrees) : [];
        if (dirty.length > 0) throw dirtyWorktreeRefusal(dirty);
      }
      snapshot = await records.prepareCleanup(preparationRequest(input));
    }
  } catch (err) {
    refusal = asTypedFailure(err);
    phase('refused');
    await condition(allHandlersFinished);
    throw refusal;
  }
  const prepSnapshot: CleanupSnapshot = snapshot!;
  prepared = true;
  progress.state = 'pending';
  progress.report.borrowed = prepSnapshot.borrowed;

  const settle = async (state: CleanupJobState): Promise<CleanupProgress> => {
    progress.state = state;
    phase(state);
    settled = true;
    await condition(allHandlersFinished);
    return progress;
  };
  const finish = async (state: 'succeeded' | 'cancelled'): Promise<CleanupProgress> => {
    if (state === 'cancelled' && !abandoned)
      progress.report = cancelledReport(input, prepSnapshot, progress.report, cancelledBy);
    if (!abandoned)
      await records.finishCleanup({
        operationId: input.operationId,
        state,
        snapshot: prepSnapshot,
        report: progress.report,
        attempts: progress.attempts,
      });
    return settle(state);
  };

  if (abandonsOnly(input.trigger)) {
    // No attempt: the environment is released and its inventory abandoned, touching no file.
    try {
      progress.report = await records.abandonEnvironment({
        operationId: input.operationId,
        snapshot: prepSnapshot,
        report: progress.report,
        attempts: 0,
        state: 'succeeded',
        by: 'operator',
      });
    } catch (err) {
      // Refused (an agent of the environment started meanwhile): the job ends, nothing changed.
      const typed = asTypedFailure(err);
      await record('cancelled');
      await settle('cancelled');
      throw typed;
    }
    abandoned = true;
    return finish('succeeded');
  }

  let roundAttempts = 0;
  for (;;) {
    // An abandonment in progress: no attempt starts until it is done (or refused).
    if (holdAttempts) await condition(() => !holdAttempts);
    if (cancelRequested) break;
    progress.attempts++;
    roundAttempts++;
    attemptInFlight = true;
    // The attempt's start and its hosts' liveness in one transaction (older histories: two steps).
    let hostsDown: string[] | null = null;
    if (patched('attempt-begins-in-one-step')) {
      progress.state = 'running';
      hostsDown = await records.beginCleanupAttempt(input.operationId, recorded(), cleanupHosts(prepSnapshot));
    } else await record('running');
    try {
      progress.report = await cleanupAttempt(input, prepSnapshot, progress.report, phase, hostsDown);
      progress.lastError = null;
      progress.nextAttemptAt = null;
      return await finish('succeeded');
    } catch (err) {
      progress.lastError = classify(err);
    }
    if (cancelRequested) break;
    // A refusal no retry can fix waits for the operator on this attempt (older histories retried it).
    const waitMs =
      waitsForOperatorAtOnce(progress.lastError) && patched('audit-refusal-waits-for-operator')
        ? null
        : waitAfterAttempt(input.policy, roundAttempts);
    if (waitMs === null) {
      phase('needs_operator');
      await record('needs_operator');
      attemptInFlight = false;
      await condition(() => retryRequested || cancelRequested);
      if (cancelRequested) break;
      retryRequested = false;
      roundAttempts = 0;
      continue;
    }
    phase('retry_wait');
    await record('retry_wait', waitMs);
    attemptInFlight = false;
    // A durable timer: it survives restarts of the worker, the gateway and the Temporal server.
    // A host of the job that registers again ends the wait at once (hostBackSignal).
    await condition(() => cancelRequested || hostBack, waitMs);
    hostBack = false;
  }

  // Cancelled (unarchive, operator, abandon): what was already removed stays accounted for; the environment is released.
  return finish('cancelled');
}

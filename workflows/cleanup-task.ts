/**
 * cleanup/<trigger>/<taskId>/<operationId>: prepare (barrier → snapshot → mutate) → attempts on
 * a bounded schedule of durable timers → `needs_operator`, where it waits for an operator retry.
 * The job row and this workflow tell the same story (the progress query, the Phase attribute).
 */
import { ApplicationFailure, allHandlersFinished, condition, patched, setHandler } from '@temporalio/workflow';
import { emptyReport, removesTask, waitAfterAttempt, type CleanupErrorClass, type CleanupInput, type CleanupJobState, type CleanupProgress, type CleanupSnapshot } from '../domain/cleanup';
import { hostSteps, recordSteps } from './activity-proxies';
import { cleanupAttempt } from './cleanup-attempt';
import { setPhase } from './phase';
import { awaitPreparedUpdate, cancelUpdate, operatorRetrySignal, progressQuery } from './cleanup-messages';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

const CLASSIFIED: CleanupErrorClass[] = ['git_worktree_remove_failed', 'git_prune_failed', 'worktree_audit_failed', 'worktree_still_registered', 'process_stop_failed', 'branch_cleanup_failed', 'save_uncommitted_failed'];

function classify(err: unknown): CleanupErrorClass {
  for (let cur: unknown = err; cur instanceof Error; cur = (cur as { cause?: unknown }).cause) {
    if (cur instanceof ApplicationFailure && CLASSIFIED.includes(cur.type as CleanupErrorClass)) return cur.type as CleanupErrorClass;
    if (cur.name === 'TimeoutFailure') return 'host_unavailable';
  }
  return 'internal';
}

export async function cleanupTask(input: CleanupInput): Promise<CleanupProgress> {
  const progress: CleanupProgress = { operationId: input.operationId, taskId: input.taskId, trigger: input.trigger, state: 'prepared', phase: 'preparing', attempts: 0, nextAttemptAt: null, lastError: null, report: emptyReport() };
  let prepared = false;
  let refusal: ApplicationFailure | null = null;
  let retryRequested = false;
  let cancelRequested = false;
  let settled = false;

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
  setHandler(cancelUpdate, async () => {
    // A pending cleanup stops at once; one in flight finishes its attempt first.
    if (!settled) cancelRequested = true;
    await condition(() => settled);
    return { state: progress.state };
  });

  const record = async (state: CleanupJobState, nextAttemptInMs: number | null = null) => {
    progress.state = state;
    await records.recordCleanupState(input.operationId, { state, attempts: progress.attempts, nextAttemptInMs, lastError: progress.lastError, report: progress.report });
  };

  // Preparation. A delete without consent is refused before any change if a worktree is dirty.
  let snapshot: CleanupSnapshot;
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
        const dirty = preview.hostId ? await hostSteps(preview.hostId).findDirtyWorktrees(preview.worktrees) : [];
        if (dirty.length > 0) throw ApplicationFailure.create({ type: 'task_delete_dirty_worktree', message: 'The task has uncommitted changes.', nonRetryable: true, details: [{ dirtyRepositories: dirty }] });
      }
      snapshot = await records.prepareCleanup({ operationId: input.operationId, taskId: input.taskId, trigger: input.trigger, workflowId: `cleanup/${input.trigger}/${input.taskId}/${input.operationId}` });
    }
  } catch (err) {
    refusal = asTypedFailure(err);
    phase('refused');
    await condition(allHandlersFinished);
    throw refusal;
  }
  prepared = true;
  progress.state = 'pending';
  progress.report.borrowed = snapshot.borrowed;

  const finish = async (state: 'succeeded' | 'cancelled'): Promise<CleanupProgress> => {
    await records.finishCleanup({ operationId: input.operationId, state, snapshot, report: progress.report, attempts: progress.attempts });
    progress.state = state;
    phase(state);
    settled = true;
    await condition(allHandlersFinished);
    return progress;
  };

  let roundAttempts = 0;
  for (;;) {
    if (cancelRequested) break;
    progress.attempts++;
    roundAttempts++;
    await record('running');
    try {
      progress.report = await cleanupAttempt(input, snapshot, progress.report, phase);
      progress.lastError = null;
      progress.nextAttemptAt = null;
      return await finish('succeeded');
    } catch (err) {
      progress.lastError = classify(err);
    }
    if (cancelRequested) break;
    const waitMs = waitAfterAttempt(input.policy, roundAttempts);
    if (waitMs === null) {
      phase('needs_operator');
      await record('needs_operator');
      await condition(() => retryRequested || cancelRequested);
      if (cancelRequested) break;
      retryRequested = false;
      roundAttempts = 0;
      continue;
    }
    phase('retry_wait');
    await record('retry_wait', waitMs);
    // A durable timer: it survives restarts of the worker, the gateway and the Temporal server.
    await condition(() => cancelRequested, waitMs);
  }

  // Cancelled (unarchive): what was already removed stays accounted for; the environment is released.
  return finish('cancelled');
}

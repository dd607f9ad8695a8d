import { ApplicationFailure, isCancellation, type TemporalFailure } from '@temporalio/workflow';
import { isErrorCode } from '../domain/errors';

/**
 * The typed outcome inside a failure chain (an activity failure wraps the activity's
 * ApplicationFailure). Rethrown at the top so the caller sees the code as the workflow's type.
 */
export function asTypedFailure(err: unknown): ApplicationFailure {
  for (let cur: unknown = err; cur instanceof Error; cur = (cur as TemporalFailure).cause) {
    if (cur instanceof ApplicationFailure && isErrorCode(cur.type)) {
      return ApplicationFailure.create({
        type: cur.type,
        message: cur.message,
        nonRetryable: true,
        details: cur.details as unknown[] | undefined,
      });
    }
  }
  if (isCancellation(err))
    return ApplicationFailure.create({
      type: 'launch_cancelled',
      message: 'The launch was cancelled.',
      nonRetryable: true,
    });
  return ApplicationFailure.create({
    type: 'internal',
    message: 'The launch failed unexpectedly.',
    nonRetryable: true,
  });
}

import { ApplicationFailure, isCancellation, type TemporalFailure } from '@temporalio/workflow';
import { ERROR_TABLE, isErrorCode, type RefusalCode } from '../domain/errors';

/**
 * A typed refusal a workflow fails with. Its message is the contract table's own: the services'
 * log reads a run's failure by it (worker/sdk-logger.ts: from the workflow's sandbox the failure's
 * type is not carried) and writes a refusal as one line, where any other failure keeps its stack.
 */
export function typedRefusal(code: RefusalCode, details?: Record<string, unknown>): ApplicationFailure {
  return ApplicationFailure.create({
    type: code,
    message: ERROR_TABLE[code].message,
    nonRetryable: true,
    details: details ? [details] : undefined,
  });
}

/**
 * The typed outcome inside a failure chain (an activity failure wraps the activity's
 * ApplicationFailure). Rethrown at the top so the caller sees the code as the workflow's type,
 * with the table's message whatever the step said (see `typedRefusal`).
 */
export function asTypedFailure(err: unknown): ApplicationFailure {
  for (let cur: unknown = err; cur instanceof Error; cur = (cur as TemporalFailure).cause) {
    if (cur instanceof ApplicationFailure && isErrorCode(cur.type)) {
      return ApplicationFailure.create({
        type: cur.type,
        message: ERROR_TABLE[cur.type].message,
        nonRetryable: true,
        details: cur.details as unknown[] | undefined,
      });
    }
  }
  if (isCancellation(err)) return typedRefusal('launch_cancelled');
  return ApplicationFailure.create({
    type: 'internal',
    message: 'The launch failed unexpectedly.',
    nonRetryable: true,
  });
}

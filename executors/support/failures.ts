/** Typed outcomes of executors and activities: what crosses the Temporal boundary by `type`. */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { CleanupErrorClass } from '../../domain/cleanup';
import { isNoSpaceFailure } from '../../domain/disk';
import { ERROR_TABLE, type ErrorCode } from '../../domain/errors';

/**
 * A typed outcome that crosses the Temporal boundary by `type`. The message is the table's
 * safe message: no path, branch or repository location ever travels in it.
 */
export function typedFailure(code: ErrorCode, details?: Record<string, unknown>): ApplicationFailure {
  return ApplicationFailure.create({
    type: code,
    message: ERROR_TABLE[code].message,
    nonRetryable: true,
    details: details ? [details] : undefined,
    // A refusal is an expected outcome, not a fault: the SDK logs a benign failure at debug, where
    // it wrote a stack trace to the service's stderr for every 409. `internal` stays a warning.
    ...(code === 'internal' ? {} : { category: ApplicationFailureCategory.BENIGN }),
  });
}

/** A cleanup attempt's classified failure (domain/cleanup.ts decides its retries); its message is the caller's safe text. */
export const cleanupFailure = (type: CleanupErrorClass, message: string): ApplicationFailure =>
  ApplicationFailure.create({ type, message, nonRetryable: true });

/** A materialization that failed and was undone: `host_disk_low` when a write found no room [R6.11], else the general refusal. */
export const materializationFailure = (err: unknown): ApplicationFailure =>
  typedFailure(isNoSpaceFailure(err) ? 'host_disk_low' : 'workspace_materialization_failed');

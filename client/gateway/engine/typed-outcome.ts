/** Reading the typed refusal out of a failed workflow or update: by ApplicationFailure `type`, never by message. */
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { isErrorCode, type ErrorCode } from '../../../domain/errors';

export interface TypedRefusal {
  code: ErrorCode;
  details: Record<string, unknown>;
}

/** The refusal a workflow or an update failed with, or null when the error is anything else (rethrow it). */
export function typedRefusalOf(err: unknown): TypedRefusal | null {
  const cause = err instanceof WorkflowFailedError || err instanceof WorkflowUpdateFailedError ? err.cause : null;
  if (cause instanceof ApplicationFailure && isErrorCode(cause.type))
    return { code: cause.type, details: (cause.details?.[0] ?? {}) as Record<string, unknown> };
  return null;
}

/** A typed refusal thrown where no outcome can be returned (a log stream's read): the caller answers it. */
export class EngineRefusal extends Error {
  constructor(readonly refusal: TypedRefusal) {
    super(refusal.code);
  }
}

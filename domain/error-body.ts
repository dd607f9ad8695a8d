/**
 * The body every error answer has (domain/errors.ts's rules, one table), and the one answer whose
 * rule depends on more than its code: an executor not offered at all.
 */
import type { ErrorAction, ErrorCode, ErrorRule } from './error-codes';
import { ERROR_TABLE } from './errors';

export interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    recoverable: boolean;
    retryAfterMs: number;
    action: ErrorAction;
    errorId: string;
    [extra: string]: unknown;
  };
}

/** `executor_unavailable` for an executor this service does not offer at all: the request is to change, not to retry. */
const EXECUTOR_NOT_OFFERED: ErrorRule = {
  status: 400,
  recoverable: false,
  retryAfterMs: 0,
  action: 'fix_request',
  message: 'This executor is not offered by this service; choose another executorType.',
};

/** The rule an answer follows: the table's, or the not-offered one for an executor the service does not run (`offered: false`). */
export const ruleOf = (code: ErrorCode, extra: Record<string, unknown> = {}): ErrorRule =>
  code === 'executor_unavailable' && extra.offered === false ? EXECUTOR_NOT_OFFERED : ERROR_TABLE[code];

export function errorBody(
  code: ErrorCode,
  errorId: string,
  message?: string,
  extra: Record<string, unknown> = {},
): ErrorBody {
  const rule = ruleOf(code, extra);
  return {
    error: {
      ...extra,
      code,
      message: message ?? rule.message,
      recoverable: rule.recoverable,
      retryAfterMs: rule.retryAfterMs,
      action: rule.action,
      errorId,
    },
  };
}

import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_TABLE, errorBody, isErrorCode, type ErrorCode } from '../../domain/errors';
import { outageOf } from '../../domain/outage';

/** An error the gateway answers with the contract's body. Messages are written for callers: no paths, branches or secrets. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message ?? ERROR_TABLE[code].message);
  }
}

export const badRequest = (message: string) => new ApiError('invalid_request', message);
export const notFound = (what: string) => new ApiError('not_found', `${what} not found.`);

export function sendError(reply: FastifyReply, code: ErrorCode, message?: string, extra: Record<string, unknown> = {}, errorId = randomUUID()) {
  const rule = ERROR_TABLE[code];
  if (rule.retryAfterMs > 0) reply.header('retry-after', Math.ceil(rule.retryAfterMs / 1000));
  return reply.code(rule.status).send(errorBody(code, errorId, message, extra));
}

/**
 * One error handler for every route: validation → 400, typed → its status, the database or the
 * engine not answering → 503 (never a 500: the same request may be retried), anything else → 500
 * with an id in the log.
 */
export function handleError(err: FastifyError | ApiError | Error, request: FastifyRequest, reply: FastifyReply) {
  const errorId = randomUUID();
  if (err instanceof ApiError) {
    if (err.code === 'internal') request.log.error({ errorId, err }, 'internal error');
    return sendError(reply, err.code, err.message, err.extra, errorId);
  }
  const outage = outageOf(err);
  if (outage) {
    // The driver's text stays in the log (it may hold a host or a port), the caller reads the table's.
    request.log.warn({ errorId, err, outage }, 'dependency unavailable');
    return sendError(reply, outage === 'database' ? 'service_unavailable' : 'engine_unavailable', undefined, {}, errorId);
  }
  const fe = err as FastifyError;
  if (fe.validation) return sendError(reply, 'invalid_request', `Invalid request: ${fe.message}`, {}, errorId);
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    // Fastify's own client errors (malformed JSON, unsupported media type, body too large).
    const code: ErrorCode = fe.statusCode === 404 ? 'not_found' : 'invalid_request';
    return sendError(reply, code, fe.statusCode === 404 ? 'Not found.' : 'The request body could not be read.', {}, errorId);
  }
  const typed = (err as { code?: unknown }).code;
  if (isErrorCode(typed) && typed !== 'internal') return sendError(reply, typed, undefined, {}, errorId);
  request.log.error({ errorId, err }, 'internal error');
  return sendError(reply, 'internal', undefined, {}, errorId);
}

/** A workflow's typed refusal as the API error; a failed check's name (never a path) travels as `reason`. */
export function refusalError(refusal: { code: ErrorCode; details: Record<string, unknown> }, message?: string): ApiError {
  const reason = refusal.details.problem ?? refusal.details.reason;
  const extra = typeof reason === 'string' && /^[a-z_]{1,64}$/.test(reason) ? { reason } : {};
  return new ApiError(refusal.code, message, extra);
}

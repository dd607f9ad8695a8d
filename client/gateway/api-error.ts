import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_TABLE, isErrorCode, type ErrorCode } from '../../domain/errors';
import { errorBody, ruleOf } from '../../domain/error-body';
import { reasonMessage } from '../../domain/refusal-reasons';
import { outageOf } from '../../domain/outage';
import { validationMessage, type SchemaError } from './validation-message';

/** An error the gateway answers with the contract's body. Messages are written for callers: no paths, branches or secrets. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message ?? ruleOf(code, extra).message);
  }
}

export const badRequest = (message: string) => new ApiError('invalid_request', message);
export const notFound = (what: string) => new ApiError('not_found', `${what} not found.`);

/** The code each error answer carried, read once it is sent (the refusal counter, client/gateway/metrics.ts). */
const answeredCodes = new WeakMap<FastifyReply, ErrorCode>();

/** The contract's code this reply answered with; undefined for an answer that is no error. */
export const answeredErrorCode = (reply: FastifyReply): ErrorCode | undefined => answeredCodes.get(reply);

function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message?: string,
  extra: Record<string, unknown> = {},
  errorId = randomUUID(),
) {
  const rule = ruleOf(code, extra);
  answeredCodes.set(reply, code);
  if (rule.retryAfterMs > 0) reply.header('retry-after', Math.ceil(rule.retryAfterMs / 1000));
  return reply.code(rule.status).send(errorBody(code, errorId, message, extra));
}

/** Fastify's client errors that have a code of their own in the contract, by the status Fastify gives them. */
const FRAMEWORK_STATUS_CODES: Partial<Record<number, ErrorCode>> = {
  404: 'not_found',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  431: 'headers_too_large',
};

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
    return sendError(
      reply,
      outage === 'database' ? 'service_unavailable' : 'engine_unavailable',
      undefined,
      {},
      errorId,
    );
  }
  const fe = err as FastifyError;
  if (fe.validation)
    return sendError(
      reply,
      'invalid_request',
      validationMessage(fe.validation as unknown as SchemaError[], fe.validationContext, validatedPart(request, fe)),
      {},
      errorId,
    );
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    // Fastify's own client errors (malformed JSON, unsupported media type, body too large): their
    // status says which, their message (it may quote the request) stays out of the body.
    const code = FRAMEWORK_STATUS_CODES[fe.statusCode] ?? 'invalid_request';
    return sendError(
      reply,
      code,
      code === 'invalid_request' ? 'The request body could not be read.' : undefined,
      {},
      errorId,
    );
  }
  const typed = (err as { code?: unknown }).code;
  if (isErrorCode(typed) && typed !== 'internal') return sendError(reply, typed, undefined, {}, errorId);
  request.log.error({ errorId, err }, 'internal error');
  return sendError(reply, 'internal', undefined, {}, errorId);
}

/** A workflow's typed refusal as the API error; a failed check's name (never a path) travels as `reason`. */
export function refusalError(
  refusal: { code: ErrorCode; details: Record<string, unknown> },
  message?: string,
): ApiError {
  const reason = refusal.details.problem ?? refusal.details.reason;
  const extra: Record<string, unknown> = typeof reason === 'string' && /^[a-z_]{1,64}$/.test(reason) ? { reason } : {};
  // A setup refused: which repository's, and how it ended (an id, a word, a number: nothing else passes).
  const { repositoryId, status, exitCode } = refusal.details;
  if (refusal.code === 'workspace_setup_failed') {
    if (typeof repositoryId === 'string' && /^[0-9a-f-]{36}$/.test(repositoryId)) extra.repositoryId = repositoryId;
    if (typeof status === 'string' && /^[a-z_]{1,32}$/.test(status)) extra.status = status;
    if (typeof exitCode === 'number' && Number.isInteger(exitCode)) extra.exitCode = exitCode;
  }
  // A reason that says what to do (domain/refusal-reasons.ts) says more than a route's general message.
  return new ApiError(refusal.code, reasonMessage(refusal.code, reason) ?? message, extra);
}

/**
 * Errors the router meets before any route (Fastify's `frameworkErrors`): a malformed percent
 * escape or a path segment longer than the router takes. Fastify's own answers quote the URL.
 */
export function handleFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void sendError(
    reply,
    'invalid_request',
    err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long.' : 'The request URL is malformed.',
  );
}

/** The longest request line (method, URL, version) a request may have: a longer URL is `uri_too_long`. */
export const MAX_REQUEST_LINE_BYTES = 8 * 1024;

/**
 * A request Node's HTTP parser refuses before Fastify sees it (the head over its size limit, a
 * malformed request line, a timeout) is answered here, in the contract's body and not Node's or
 * Fastify's. An overflowing head whose request line alone is over the limit is a long URL.
 */
export function answerClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let code: ErrorCode = 'invalid_request';
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    const lineEnd = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.indexOf('\r\n') : -1;
    code = lineEnd === -1 || lineEnd > MAX_REQUEST_LINE_BYTES ? 'uri_too_long' : 'headers_too_large';
  }
  const rule = ERROR_TABLE[code];
  const body = JSON.stringify(
    errorBody(code, randomUUID(), code === 'invalid_request' ? 'The request could not be read.' : undefined),
  );
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${rule.status} ${STATUS_CODES[rule.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  } else {
    socket.destroy();
  }
}

/** The part of the request a validation error is about (its body, query or path), for the names it holds. */
function validatedPart(request: FastifyRequest, fe: FastifyError): unknown {
  if (fe.validationContext === 'body') return request.body;
  if (fe.validationContext === 'querystring') return request.query;
  if (fe.validationContext === 'params') return request.params;
  return undefined;
}

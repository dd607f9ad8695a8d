/**
 * Which part the service depends on did not answer, read from an error's code and structure:
 * the database (→ `service_unavailable`) or the workflow engine (→ `engine_unavailable`). Null
 * for anything else, which stays an ordinary error. An outage means nothing was decided, so the
 * caller may retry the same request.
 */
export type Outage = 'database' | 'engine';

/** Socket failures. Only the pg driver opens plain sockets in these processes: Temporal's come back as gRPC statuses. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);

/** SQLSTATE: admin shutdown, crash shutdown, cannot connect now (starting up, recovering). Class 08 is matched whole. */
const SERVER_GOING_AWAY = new Set(['57P01', '57P02', '57P03']);

/**
 * The pg driver's own connection errors carry no code, only these fixed texts (pg/lib/client.js,
 * pg-pool/index.js): the one place we read a message, because there is nothing else to read.
 */
const PG_CONNECTION_MESSAGES = new Set([
  'Connection terminated',
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
]);

/** gRPC status codes: the server cannot be reached, or did not answer in time. */
const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;

export function outageOf(err: unknown): Outage | null {
  const seen = new Set<unknown>();
  const visit = (cur: unknown): Outage | null => {
    if (cur === null || typeof cur !== 'object' || seen.has(cur) || seen.size > 16) return null;
    seen.add(cur);
    const e = cur as {
      code?: unknown;
      name?: unknown;
      message?: unknown;
      details?: unknown;
      metadata?: unknown;
      cause?: unknown;
      errors?: unknown;
    };
    // A gRPC error (grpc-js, or the Temporal core bridge's ServiceError) has a numeric status and details or metadata.
    const grpc =
      typeof e.code === 'number' &&
      (typeof e.details === 'string' || (typeof e.metadata === 'object' && e.metadata !== null));
    if (grpc && (e.code === GRPC_UNAVAILABLE || e.code === GRPC_DEADLINE_EXCEEDED)) return 'engine';
    // The core bridge's failure to reach the server at all.
    if (e.name === 'TransportError') return 'engine';
    if (typeof e.code === 'string') {
      if (SOCKET_CODES.has(e.code)) return 'database';
      if (/^08[0-9A-Z]{3}$/.test(e.code) || SERVER_GOING_AWAY.has(e.code)) return 'database';
    } else if (e.code === undefined && typeof e.message === 'string' && PG_CONNECTION_MESSAGES.has(e.message)) {
      return 'database';
    }
    // Node reports a failed connection to every address of a host as an AggregateError.
    for (const inner of Array.isArray(e.errors) ? e.errors : []) {
      const found = visit(inner);
      if (found) return found;
    }
    return visit(e.cause);
  };
  return visit(err);
}

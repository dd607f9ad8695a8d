import { ServiceError } from '@temporalio/client';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { outageOf } from '../../domain/outage';
import { freePort } from '../support/harness';

const sqlError = (code: string) => Object.assign(new pg.DatabaseError('boom', 0, 'error'), { code });
/** gRPC status codes (grpc-js `status`): the shape the Temporal client's transport rejects with. */
const status = { DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, ALREADY_EXISTS: 6, UNAVAILABLE: 14 };
const grpcError = (code: number) =>
  Object.assign(new Error(`${code} status`), { code, details: 'no connection', metadata: {} });

describe('outage classification', () => {
  it('names the database for a refused connection, as pg reports it', async () => {
    const client = new pg.Client({ connectionString: `postgres://x:y@127.0.0.1:${await freePort()}/db` });
    const err = await client.connect().then(
      () => null,
      (e: unknown) => e,
    );
    expect(outageOf(err)).toBe('database');
  });

  it('names the database for socket codes, SQLSTATE class 08 and 57P01-57P03, and the pool and driver connection errors', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'])
      expect(outageOf(Object.assign(new Error('x'), { code })), code).toBe('database');
    for (const code of ['08000', '08003', '08006', '08001', '08P01', '57P01', '57P02', '57P03'])
      expect(outageOf(sqlError(code)), code).toBe('database');
    for (const message of [
      'Connection terminated unexpectedly',
      'timeout exceeded when trying to connect',
      'Connection terminated due to connection timeout',
    ]) {
      expect(outageOf(new Error(message)), message).toBe('database');
    }
    expect(outageOf(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]))).toBe('database');
    expect(outageOf(new Error('wrapped', { cause: sqlError('57P01') }))).toBe('database');
  });

  it('names the engine for a Temporal ServiceError over gRPC UNAVAILABLE or DEADLINE_EXCEEDED', () => {
    expect(outageOf(new ServiceError('Failed to start', { cause: grpcError(status.UNAVAILABLE) }))).toBe('engine');
    expect(outageOf(new ServiceError('Failed to query', { cause: grpcError(status.DEADLINE_EXCEEDED) }))).toBe(
      'engine',
    );
    expect(outageOf(grpcError(status.UNAVAILABLE))).toBe('engine');
  });

  it('leaves everything else to the ordinary error path', () => {
    expect(outageOf(sqlError('23505'))).toBeNull(); // unique violation
    expect(outageOf(sqlError('57014'))).toBeNull(); // query cancelled: not an outage
    expect(outageOf(grpcError(status.NOT_FOUND))).toBeNull();
    expect(outageOf(grpcError(status.ALREADY_EXISTS))).toBeNull();
    // A message that merely mentions a connection is not read when a code says otherwise.
    expect(outageOf(Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ENOENT' }))).toBeNull();
    expect(outageOf(new Error('could not connect to the repository'))).toBeNull();
    expect(outageOf(Object.assign(new Error('x'), { code: 14 }))).toBeNull(); // a number without gRPC's shape
    expect(outageOf(null)).toBeNull();
    expect(outageOf('ECONNREFUSED')).toBeNull();
    const cyclic: { cause?: unknown } & Error = new Error('loop');
    cyclic.cause = cyclic;
    expect(outageOf(cyclic)).toBeNull();
  });
});

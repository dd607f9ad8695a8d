import pg from 'pg';
import { outageOf } from '../domain/outage';

export type Pool = pg.Pool;
export type Db = pg.Pool | pg.PoolClient;

/**
 * The one pool of a process. While the database is gone the process keeps running: queries fail
 * (the gateway answers 503, activities go into Temporal's retries) and the pool connects afresh
 * once the server answers again.
 */
export function createPool(databaseUrl: string, max = 20): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    idleTimeoutMillis: 30_000,
    // A refused connection fails at once; a server that does not answer (or a pool with no free
    // client) fails after this instead of holding a request. Launch transactions take milliseconds.
    connectionTimeoutMillis: 5_000,
    // A server that vanished without closing the socket is noticed by the kernel, not never.
    keepAlive: true,
  });
  // An idle client that loses its server must not crash the process; the pool drops it.
  pool.on('error', () => {});
  // pg-pool listens for 'error' on a client only while it is idle: a client checked out (a
  // transaction, a repository lock held across git work) whose server dies between two queries
  // would emit an unhandled 'error' and end the process. Its queries fail anyway; whoever holds
  // it releases it with the error (`withClient`), and the pool never reuses a broken client.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * A client checked out for several statements. One whose connection broke is released with the
 * error, so the pool destroys it instead of handing it to the next caller.
 */
export async function withClient<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient, markBroken: (err: Error) => void) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken ??= err;
  };
  client.on('error', onError);
  try {
    return await fn(client, onError);
  } catch (err) {
    if (!broken && outageOf(err) === 'database') broken = err as Error;
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

export async function inTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  return withClient(pool, async (client, markBroken) => {
    await client.query(begin);
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      // The transaction's own failure is the answer; a connection whose ROLLBACK failed is in an
      // unknown state, so it is destroyed rather than handed to the next caller.
      await client.query('ROLLBACK').catch(markBroken);
      throw err;
    }
  });
}

/**
 * Reads that must agree with each other (a session and its latest execution; a task and its
 * sessions): one snapshot for all of them, so a reader never sees one row before a commit and its
 * partner after it. Read-only: it takes no lock and never waits on a writer.
 */
export function inSnapshot<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return inTransaction(pool, fn, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
}

export const isUniqueViolation = (err: unknown): boolean => (err as { code?: string })?.code === '23505';
/** A row still referenced by another table's foreign key (a delete), or a reference to a row that is gone. */
export const isForeignKeyViolation = (err: unknown): boolean => (err as { code?: string })?.code === '23503';
/** A row a CHECK constraint refuses. */
export const isCheckViolation = (err: unknown): boolean => (err as { code?: string })?.code === '23514';

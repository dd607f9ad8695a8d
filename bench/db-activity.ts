/**
 * Transactions the database committed or rolled back (pg_stat_database), around a measured
 * stretch: how chatty a workload is. The statistics reach pg_stat_database with a delay of up to
 * about a second, so this is for stretches of many seconds, read after a short settle.
 */
import type pg from 'pg';
import { sleep } from './processes';

async function transactions(pool: pg.Pool): Promise<number> {
  const res = await pool.query<{ n: string }>(
    'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(res.rows[0]?.n ?? 0);
}

export class TransactionAccount {
  total = 0;
  constructor(private readonly pool: pg.Pool) {}

  async around<T>(fn: () => Promise<T>): Promise<T> {
    const before = await transactions(this.pool);
    try {
      return await fn();
    } finally {
      await sleep(1200);
      this.total += (await transactions(this.pool)) - before - 2; // the two reads are transactions themselves
    }
  }
}

import path from 'node:path';
import { runner } from 'node-pg-migrate';

/** Applies the forward-only migrations in db/migrations. Safe to run concurrently (it takes a lock). */
export async function migrate(databaseUrl: string, log: (msg: string) => void = () => {}): Promise<void> {
  await runner({
    databaseUrl,
    dir: path.join(__dirname, 'migrations'),
    direction: 'up',
    migrationsTable: 'pgmigrations',
    count: Infinity,
    singleTransaction: true,
    log,
    logger: { debug: () => {}, info: log, warn: log, error: log },
  });
}

import type pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../../domain/config';

/** What every activity factory and every executor receives: tests and fault injection hand in their own. */
export interface ActivityDeps {
  pool: pg.Pool;
  config: Config;
  logger: Logger;
}

import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Config } from '../../domain/config';

/** What the gateway's routes receive: no activities, only the database, Temporal and configuration. */
export interface GatewayContext {
  config: Config;
  pool: pg.Pool;
  temporal: Client;
}

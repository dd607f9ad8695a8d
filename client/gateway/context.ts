import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Config } from '../../domain/config';
import type { AgentIsolation, AgentNetworkPolicy } from '../../domain/sandbox';

/** What the gateway's routes receive: no activities, only the database, Temporal and configuration. */
export interface GatewayContext {
  config: Config;
  pool: pg.Pool;
  temporal: Client;
  /** What agents run in on this gateway's host (said in /readyz); unknown: `none`. */
  agentIsolation?: AgentIsolation;
  /** The network agents have on this gateway's host (said in /readyz); unknown: `host`. */
  agentNetwork?: AgentNetworkPolicy;
}

/** What every scenario receives: the running system, the clients, the floor and the run's settings. */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Api } from './api';
import type { BenchConfig } from './config';
import type { CpuMeter } from './cpu';
import type { EngineFloor } from './engine-floor';
import type { Floor } from './floor';
import type { Services } from './services';
import type { Repo } from './world';

export interface BenchContext {
  config: BenchConfig;
  services: Services;
  api: Api;
  /** The benchmark's own connections (floor transactions, seeding, EXPLAIN). */
  pool: pg.Pool;
  floor: Floor;
  /** Workflows of a scenario's shape with no work, on a worker in this process (the engine floor). */
  engine: EngineFloor;
  /** Reads launch histories for the profile. */
  temporal: Client;
  reposDir: string;
  /** Where the floor materializes (a sibling of the product's workspace root). */
  floorRoot: string;
  /** Three small registered repositories the seeded tasks refer to. */
  catalogRepos: Repo[];
  /** CPU per process group (worker, gateway, temporal, postgres, bench); null where /proc is not readable. */
  cpu: CpuMeter | null;
  log(message: string): void;
}

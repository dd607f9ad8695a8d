/**
 * A test file's system on the time-skipping test server: the harness (PostgreSQL, the gateway on
 * the dev server) plus a worker polling the same task queues on the time-skipping server, so that
 * runs started there skip their timers and their clock.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { afterAll, beforeAll, inject } from 'vitest';
import { resolveTimeSkippingServer } from '../../client/launcher/temporal-cli';
import type { Config } from '../../domain/config';
import { startWorker, type WorkerHandle } from '../../worker/worker';
import { createHarness, type Harness } from './harness';

export interface TimeSkippingSystem {
  h: Harness;
  env: TestWorkflowEnvironment;
  worker: WorkerHandle;
}

export function timeSkippingSystem(overrides: (h: Harness) => Partial<Config> = () => ({})): TimeSkippingSystem {
  const system = {} as TimeSkippingSystem;
  beforeAll(async () => {
    system.h = await createHarness();
    system.env = await TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: 'existing-path', path: resolveTimeSkippingServer(process.cwd()) } },
    });
    system.worker = await startWorker({
      config: { ...system.h.config, ...overrides(system.h) },
      pool: system.h.pool,
      logger: pino({ level: 'silent' }),
      connection: system.env.nativeConnection,
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
  });
  afterAll(async () => {
    await system.worker?.shutdown();
    await system.env?.teardown();
    await system.h?.close();
  });
  return system;
}

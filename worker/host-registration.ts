/**
 * This worker's host as a record: registered at start, then a heartbeat every
 * `hostHeartbeatEveryMs`, so the gateway can place work on it and tell when it is gone.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import type { Logger } from 'pino';
import { registerHost, type HostRecord } from '../db/hosts';
import { EXECUTOR_TYPES } from '../domain/admission';
import type { Config } from '../domain/config';
import { outageOf } from '../domain/outage';
import { containerAvailability } from '../executors/container/engine';

/** The version of the package this process runs (the nearest package.json above it). */
function packageVersion(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file))
      return String((JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version ?? 'unknown');
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

/** The executors this host offers (`container` where an engine is configured), and whether it can run containers now. */
async function hostRecordOf(config: Config): Promise<HostRecord> {
  const offered = config.containers.engineSocket !== null;
  return {
    hostId: config.hostId,
    workspaceRoot: config.workspaceRoot,
    version: packageVersion(),
    executors: EXECUTOR_TYPES.filter((e) => e !== 'container' || offered),
    heartbeatEveryMs: config.hostHeartbeatEveryMs,
    containers: await containerAvailability(config.containers),
  };
}

/**
 * Registers now (a database that does not answer yet is tried again at the next beat: the worker
 * polls regardless) and every interval after; `stop()` ends the beat, and resolves once a beat in
 * flight has ended (the pool may be closed after it).
 */
export async function startHostRegistration(
  pool: pg.Pool,
  config: Config,
  logger: Logger,
): Promise<{ stop(): Promise<void> }> {
  const hostId = config.hostId;
  let inFlight: Promise<void> | null = null;
  const beat = async () => {
    try {
      await registerHost(pool, await hostRecordOf(config));
    } catch (err) {
      if (outageOf(err)) logger.warn({ hostId }, 'database unavailable; host heartbeat missed');
      else logger.error({ err, hostId }, 'host heartbeat failed');
    }
  };
  const tick = () => (inFlight ??= beat().finally(() => (inFlight = null)));
  await tick();
  const timer = setInterval(() => void tick(), config.hostHeartbeatEveryMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await inFlight;
    },
  };
}

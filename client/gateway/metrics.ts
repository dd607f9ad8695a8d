/** The gateway's Prometheus registry: its own HTTP metrics plus the cluster-wide counters workers record. */
import type pg from 'pg';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { readCounters } from '../../db/metric-counters';
import { CORESIDENCY_ADMITTED_TOTAL, CORESIDENCY_SKIPPED_TOTAL } from '../../domain/coresidency';
import { RECONCILE_REPAIRED_TOTAL } from '../../domain/reconcile';

export interface GatewayMetrics {
  registry: Registry;
  requestSeconds: Histogram<'method' | 'route' | 'status'>;
}

function storedCounter(registry: Registry, pool: pg.Pool, name: string, help: string, labelNames: string[]): void {
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      const rows = await readCounters(pool, name);
      this.reset();
      for (const row of rows) this.inc(row.labels, row.value);
    },
  });
}

export function createGatewayMetrics(pool: pg.Pool): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  storedCounter(
    registry,
    pool,
    CORESIDENCY_ADMITTED_TOTAL,
    'Agent sessions started while another session of the task was starting or running, by site',
    ['site'],
  );
  storedCounter(
    registry,
    pool,
    CORESIDENCY_SKIPPED_TOTAL,
    'Co-residency observations skipped because the sibling sessions could not be read, by reason',
    ['reason'],
  );
  storedCounter(
    registry,
    pool,
    RECONCILE_REPAIRED_TOTAL,
    'Rows the consistency check found stranded (their workflow closed, their process gone, their start unrecorded) and repaired, by kind',
    ['kind'],
  );
  return { registry, requestSeconds };
}

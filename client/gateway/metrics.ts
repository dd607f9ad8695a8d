/** The gateway's Prometheus registry: its own HTTP metrics plus the cluster-wide counters workers record. */
import type pg from 'pg';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { listHosts, type HostView } from '../../db/hosts';
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

/** A gauge per host from the hosts' records (their disk as each worker last measured it) [R6.11]. */
function hostGauge(
  registry: Registry,
  pool: pg.Pool,
  name: string,
  help: string,
  value: (host: HostView) => number | null,
): void {
  new Gauge({
    name,
    help,
    labelNames: ['host'],
    registers: [registry],
    async collect() {
      const hosts = await listHosts(pool, 10_000, null);
      this.reset();
      for (const host of hosts) {
        const v = value(host);
        if (v !== null) this.set({ host: host.hostId }, v);
      }
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
  hostGauge(registry, pool, 'tws_host_disk_free_bytes', "Free bytes of the host's workspace root filesystem", (h) =>
    h.disk ? h.disk.freeBytes : null,
  );
  hostGauge(registry, pool, 'tws_host_disk_total_bytes', "Total bytes of the host's workspace root filesystem", (h) =>
    h.disk ? h.disk.totalBytes : null,
  );
  hostGauge(
    registry,
    pool,
    'tws_host_workspace_bytes',
    'Bytes of the workspaces the host holds, as last measured',
    (h) => (h.disk ? h.disk.workspaceBytes : null),
  );
  hostGauge(
    registry,
    pool,
    'tws_host_disk_low',
    'Whether the host refuses new workspaces for low disk (1) or not (0)',
    (h) => (h.disk ? Number(h.lowDisk) : null),
  );
  return { registry, requestSeconds };
}

/**
 * The gateway's Prometheus registry: its own HTTP metrics, its launches and refusals, the
 * cluster-wide counters workers record, and gauges read from the database at scrape time (one
 * query per family, never one per host). /metrics serves it, then this process's Temporal SDK
 * metrics (client/gateway/sdk-metrics.ts).
 */
import type pg from 'pg';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { activeJobCounts } from '../../db/cleanup-jobs';
import { hostVitals, listHosts } from '../../db/hosts';
import { readCounters } from '../../db/metric-counters';
import type { ListenAddress } from '../../domain/config';
import { CORESIDENCY_ADMITTED_TOTAL, CORESIDENCY_SKIPPED_TOTAL } from '../../domain/coresidency';
import type { ErrorCode } from '../../domain/errors';
import { allTaskUsage } from '../../db/task-usage';
import { AGENTS_ENDED_BY_LIMIT_TOTAL, type AgentLimits } from '../../domain/limits';
import { RECONCILE_REPAIRED_TOTAL } from '../../domain/reconcile';
import { SPAN_EXPORTS_FAILED_TOTAL } from '../../domain/trace-ids';
import { sdkMetricsReader } from './sdk-metrics';

/** One answered request, as the response hook sees it. */
interface Answer {
  method: string;
  route: string;
  status: number;
  /** The contract's code when the answer is an error. */
  errorCode: ErrorCode | undefined;
  seconds: number;
}

export interface GatewayMetrics {
  registry: Registry;
  observeAnswer(answer: Answer): void;
  /** The Prometheus text /metrics answers: the registry, then the SDK's own when it is served. */
  exposition(): Promise<string>;
}

/** The requests that start an agent, by what they are. */
const LAUNCH_ROUTES: Record<string, 'launch' | 'resume'> = {
  'POST /v1/tasks/:id/sessions': 'launch',
  'POST /v1/sessions/:id/resume': 'resume',
};

/**
 * From an attach (~40 ms) to a first launch of several large repositories (seconds); past a
 * minute is a launch that waited on something.
 */
const LAUNCH_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

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

/** One read shared by every gauge a scrape collects at once (prom-client collects them together). */
function sharedRead<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | null = null;
  return () => {
    inFlight ??= read().finally(() => {
      inFlight = null;
    });
    return inFlight;
  };
}

/** A gauge per host from one read of every host's record [R6.11]. */
function hostGauge<T extends { hostId: string }>(
  registry: Registry,
  hosts: () => Promise<T[]>,
  name: string,
  help: string,
  value: (host: T) => number | null,
): void {
  new Gauge({
    name,
    help,
    labelNames: ['host'],
    registers: [registry],
    async collect() {
      const rows = await hosts();
      this.reset();
      for (const host of rows) {
        const v = value(host);
        if (v !== null) this.set({ host: host.hostId }, v);
      }
    },
  });
}

export function createGatewayMetrics(
  pool: pg.Pool,
  sdkMetricsAddress: ListenAddress | null = null,
  taskMaximum: AgentLimits | null = null,
): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const launchSeconds = new Histogram({
    name: 'tws_launch_duration_seconds',
    help: 'Launches and resumes from request to answer (started: the agent runs; accepted: admitted, with Prefer: respond-async; refused: an error answer), by kind and outcome',
    labelNames: ['kind', 'outcome'] as const,
    buckets: LAUNCH_BUCKETS,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'tws_refusals_total',
    help: "Requests answered with an error, by the contract's code, its status, and the route",
    labelNames: ['code', 'status', 'method', 'route'] as const,
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
  storedCounter(
    registry,
    pool,
    AGENTS_ENDED_BY_LIMIT_TOTAL,
    'Agents a limit of theirs ended, by outcome (oom_killed: the kernel killed a process of theirs at their memory limit; disk_quota: stopped, their task over its disk quota; disk_low: stopped, the free space of their host about to fall under its minimum)',
    ['outcome'],
  );
  storedCounter(
    registry,
    pool,
    SPAN_EXPORTS_FAILED_TOTAL,
    'Spans a service could not export to the OpenTelemetry collector (OTEL_EXPORTER_OTLP_ENDPOINT) and dropped, by service',
    ['service'],
  );
  new Gauge({
    name: 'tws_cleanup_jobs',
    help: 'Cleanup jobs not yet ended, by state (needs_operator: waiting for an operator retry or cancel)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const counts = await activeJobCounts(pool);
      this.reset();
      for (const { state, jobs } of counts) this.set({ state }, jobs);
    },
  });
  const hosts = sharedRead(() => listHosts(pool, 10_000, null));
  hostGauge(registry, hosts, 'tws_host_disk_free_bytes', "Free bytes of the host's workspace root filesystem", (h) =>
    h.disk ? h.disk.freeBytes : null,
  );
  hostGauge(registry, hosts, 'tws_host_disk_total_bytes', "Total bytes of the host's workspace root filesystem", (h) =>
    h.disk ? h.disk.totalBytes : null,
  );
  hostGauge(
    registry,
    hosts,
    'tws_host_workspace_bytes',
    'Bytes of the workspaces the host holds, as last measured',
    (h) => (h.disk ? h.disk.workspaceBytes : null),
  );
  hostGauge(
    registry,
    hosts,
    'tws_host_disk_low',
    'Whether the host refuses new workspaces for low disk (1) or not (0)',
    (h) => (h.disk ? Number(h.lowDisk) : null),
  );
  const vitals = sharedRead(() => hostVitals(pool));
  hostGauge(
    registry,
    vitals,
    'tws_host_up',
    'Whether the host is live (1: its last heartbeat is younger than three of its intervals) or not (0)',
    (h) => Number(h.live),
  );
  hostGauge(
    registry,
    vitals,
    'tws_host_heartbeat_age_seconds',
    "Seconds since the host's worker last said it is alive",
    (h) => h.heartbeatAgeSeconds,
  );
  hostGauge(
    registry,
    vitals,
    'tws_host_agents_running',
    'Agent processes recorded running on the host',
    (h) => h.agentsRunning,
  );

  // Usage against limit: per host, the largest share of the task maximum any task's agents use.
  const usage = sharedRead(async () => {
    const byHost = new Map<string, { hostId: string; memory: number; pids: number }>();
    for (const u of await allTaskUsage(pool)) {
      const host = byHost.get(u.hostId) ?? { hostId: u.hostId, memory: 0, pids: 0 };
      host.memory = Math.max(host.memory, taskMaximum ? u.memoryBytes / taskMaximum.memoryBytes : 0);
      host.pids = Math.max(host.pids, taskMaximum ? u.pids / taskMaximum.pids : 0);
      byHost.set(u.hostId, host);
    }
    return [...byHost.values()];
  });
  hostGauge(
    registry,
    usage,
    'tws_task_memory_usage_ratio_max',
    "The largest share of its memory maximum (TWS_AGENT_MEMORY_MAX) any task's agents use together on the host",
    (h) => h.memory,
  );
  hostGauge(
    registry,
    usage,
    'tws_task_pids_usage_ratio_max',
    "The largest share of its process maximum (TWS_AGENT_PIDS_MAX) any task's agents use together on the host",
    (h) => h.pids,
  );

  const sdkMetrics = sdkMetricsReader(sdkMetricsAddress);
  return {
    registry,
    observeAnswer({ method, route, status, errorCode, seconds }) {
      requestSeconds.observe({ method, route, status: String(status) }, seconds);
      if (errorCode) refusals.inc({ code: errorCode, status: String(status), method, route });
      const kind = LAUNCH_ROUTES[`${method} ${route}`];
      if (kind) {
        const outcome = errorCode || status >= 400 ? 'refused' : status === 202 ? 'accepted' : 'started';
        launchSeconds.observe({ kind, outcome }, seconds);
      }
    },
    async exposition() {
      const [ours, sdk] = await Promise.all([registry.metrics(), sdkMetrics()]);
      return sdk ? `${ours}${ours.endsWith('\n') ? '' : '\n'}${sdk}` : ours;
    },
  };
}

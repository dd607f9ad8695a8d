/**
 * The Temporal SDK's own metrics: its Core measures every worker and client of the process (task
 * latencies, slots, polls, requests to the engine) and serves them for Prometheus on
 * TWS_SDK_METRICS_ADDRESS, beside the service's own metrics (docs/operating.md, "Metrics").
 */
import type { TelemetryOptions } from '@temporalio/worker';
import { parseSdkMetricsAddress, socketAddressOf } from '../domain/config';

/** Every SDK metric's name starts so (`temporal_workflow_task_schedule_to_start_latency`); ours never do. */
const SDK_METRIC_PREFIX = 'temporal_';

/**
 * The runtime's telemetry for `Runtime.install` (once per process, before any connection): the
 * Prometheus exporter when an address is set, else the SDK's defaults (no exporter). Durations in
 * seconds, as our own histograms are; counters keep the SDK's documented names (no `_total`).
 */
export function sdkTelemetry(env: Record<string, string | undefined>): TelemetryOptions | undefined {
  const address = parseSdkMetricsAddress(env.TWS_SDK_METRICS_ADDRESS);
  if (!address) return undefined;
  return {
    metrics: {
      metricPrefix: SDK_METRIC_PREFIX,
      prometheus: { bindAddress: socketAddressOf(address), useSecondsForDurations: true },
    },
  };
}

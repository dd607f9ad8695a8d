/**
 * Span exports that fail (the collector down, refusing, too slow) are not silent: each failed
 * batch is counted, by service, in `tws_span_exports_failed_total` (the spans it held; stored in
 * the database, served by the gateway's /metrics like the workers' other counters), and said on
 * stderr in one line at most once a minute, with how many failed since the last line.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { incrementCounter } from '../db/metric-counters';
import { SPAN_EXPORTS_FAILED_TOTAL } from '../domain/trace-ids';
import type { ExportFailureReport, ServiceName } from './tracing';

/** How often a failing export is said at most. */
const SAY_EVERY_MS = 60_000;

export function spanExportFailures(
  service: ServiceName,
  deps: { pool: pg.Pool; logger: Logger },
  sayEveryMs = SAY_EVERY_MS,
): ExportFailureReport {
  let lastSaid = -Infinity;
  let unsaid = { batches: 0, spans: 0, uncounted: 0 };
  let lastError: string | undefined;
  const say = () => {
    deps.logger.warn(
      {
        service,
        failedBatches: unsaid.batches,
        failedSpans: unsaid.spans,
        notCounted: unsaid.uncounted,
        error: lastError,
      },
      'span export failed: the spans are dropped (is the collector at OTEL_EXPORTER_OTLP_ENDPOINT up?)',
    );
    lastSaid = performance.now();
    unsaid = { batches: 0, spans: 0, uncounted: 0 };
  };
  return (failedSpans, error) => {
    unsaid.batches++;
    unsaid.spans += failedSpans;
    lastError = error?.message;
    const counted = incrementCounter(deps.pool, SPAN_EXPORTS_FAILED_TOTAL, { service }, failedSpans).then(
      () => true,
      () => false,
    );
    void counted.then((ok) => {
      // A count the database did not take is said with the next line.
      if (!ok) unsaid.uncounted += failedSpans;
      if (performance.now() - lastSaid >= sayEveryMs) say();
    });
  };
}

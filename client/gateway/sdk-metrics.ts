/**
 * This process's Temporal SDK metrics (its Core's Prometheus exporter, worker/sdk-telemetry.ts),
 * read on loopback at each scrape so that one scrape of the gateway's /metrics carries them after
 * ours. The names never meet: every SDK metric starts `temporal_`, none of ours does.
 */
import { localApiUrl, type ListenAddress } from '../../domain/config';

/** A scrape waits this long for the exporter at most; past it, /metrics answers with ours alone. */
const READ_WITHIN_MS = 2000;

/**
 * A reader of the exporter's text; '' when none is served. An exporter that does not answer is
 * one comment line (Prometheus skips it), so the scrape still succeeds with our metrics.
 */
export function sdkMetricsReader(address: ListenAddress | null): () => Promise<string> {
  if (!address) return async () => '';
  // A wildcard bind address is read on loopback.
  const url = `${localApiUrl(address.host, address.port)}/metrics`;
  return async () => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(READ_WITHIN_MS) });
      if (!res.ok) throw new Error(`status ${res.status}`);
      return await res.text();
    } catch (err) {
      const reason = err instanceof Error ? err.message.replace(/\s+/g, ' ') : 'unknown';
      return `# The Temporal SDK metrics of this process could not be read (${reason}).\n`;
    }
  };
}

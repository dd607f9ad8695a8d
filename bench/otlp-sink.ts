/**
 * A local OTLP/HTTP receiver that accepts and discards traces, for scenario 14: `POST /v1/traces`
 * answers 200 `{}` (an empty ExportTraceServiceResponse) once the body is read; anything else 404.
 * It counts what arrives, by the label set when it arrived (the phase of the scenario), so the
 * results say the spans were really exported. The body is JSON (the product's exporter is
 * OTLP/HTTP JSON); its spans are counted, a body that does not parse counts as a request only.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SinkCounts {
  requests: number;
  bytes: number;
  spans: number;
}

export interface OtlpSink {
  /** `http://127.0.0.1:<port>`, for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds `/v1/traces`). */
  endpoint: string;
  /** What arrives from now on counts under this label. */
  label(name: string): void;
  counts(): Record<string, SinkCounts>;
  close(): Promise<void>;
}

interface OtlpTraces {
  resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[];
}

function spansIn(body: string): number {
  try {
    const parsed = JSON.parse(body) as OtlpTraces;
    return (parsed.resourceSpans ?? []).reduce(
      (sum, rs) => sum + (rs.scopeSpans ?? []).reduce((s, ss) => s + (ss.spans?.length ?? 0), 0),
      0,
    );
  } catch {
    return 0;
  }
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let current = 'unlabelled';
  const counts: Record<string, SinkCounts> = {};
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      const c = (counts[current] ??= { requests: 0, bytes: 0, spans: 0 });
      c.requests++;
      c.bytes += body.length;
      c.spans += spansIn(body.toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    label(name) {
      current = name;
    },
    counts: () => structuredClone(counts),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Real endpoints in front of the run's Temporal dev server, as a deployment's engine would be:
 * one that takes only a client certificate of its CA (mutual TLS, checked in the handshake) and
 * one that takes only an API key (checked on every gRPC call, as Temporal Cloud does). Each
 * counts what it let through and what it refused, so a test can prove its traffic went this way.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';

/** The name the proxies' certificate carries besides 127.0.0.1 and localhost. */
export const PROXY_SERVER_NAME = 'engine.test';

export interface TestCertificates {
  caCert: string;
  serverCert: string;
  serverKey: string;
  /** Signed by caCert: the certificate the mTLS proxy takes. */
  clientCert: string;
  clientKey: string;
  /** Signed by another CA, made the same way: the one it refuses. */
  strangerCert: string;
  strangerKey: string;
}

const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

function makeCa(dir: string, name: string): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  openssl(['req', '-x509', ...newKey, '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`]);
  return { cert, key };
}

async function signed(dir: string, name: string, ca: { cert: string; key: string }, extensions: string) {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  const csr = path.join(dir, `${name}.csr`);
  const ext = path.join(dir, `${name}.ext`);
  await writeFile(ext, `basicConstraints=CA:FALSE\n${extensions}`);
  openssl(['req', ...newKey, '-keyout', key, '-out', csr, '-subj', `/CN=${name}`]);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-out',
    cert,
    '-days',
    '2',
    '-extfile',
    ext,
  ]);
  return { cert, key };
}

/** A CA, a server certificate for 127.0.0.1/localhost/PROXY_SERVER_NAME, a client of it and a client of another CA. */
export async function makeTestCertificates(dir: string): Promise<TestCertificates> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const ca = makeCa(dir, 'engine-ca');
  const other = makeCa(dir, 'other-ca');
  const server = await signed(
    dir,
    'server',
    ca,
    `subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:${PROXY_SERVER_NAME}\nextendedKeyUsage=serverAuth\n`,
  );
  const client = await signed(dir, 'client', ca, 'extendedKeyUsage=clientAuth\n');
  const stranger = await signed(dir, 'stranger', other, 'extendedKeyUsage=clientAuth\n');
  return {
    caCert: ca.cert,
    serverCert: server.cert,
    serverKey: server.key,
    clientCert: client.cert,
    clientKey: client.key,
    strangerCert: stranger.cert,
    strangerKey: stranger.key,
  };
}

export interface EngineProxy {
  /** host:port, for TEMPORAL_ADDRESS. */
  address: string;
  /** Connections (mTLS) or gRPC calls (API key) let through to the engine. */
  readonly accepted: number;
  /** Handshakes (mTLS) or gRPC calls (API key) refused. */
  readonly refused: number;
  close(): Promise<void>;
}

const listening = (server: net.Server): Promise<string> =>
  new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const a = server.address() as net.AddressInfo;
      resolve(`127.0.0.1:${a.port}`);
    });
  });

const hostAndPort = (address: string): [string, number] => {
  const at = address.lastIndexOf(':');
  return [address.slice(0, at), Number(address.slice(at + 1))];
};

/** A proxy's handle: its address, its live counts, and a close that drops its open connections first. */
function proxyHandle(
  address: string,
  counts: { accepted: number; refused: number },
  server: net.Server,
  dropOpen: () => void,
): EngineProxy {
  return {
    address,
    get accepted() {
      return counts.accepted;
    },
    get refused() {
      return counts.refused;
    },
    async close() {
      dropOpen();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Mutual TLS in front of `engineAddress`: a client without a certificate of the CA fails the
 * handshake; one with it has its bytes carried to the engine's TCP port unchanged.
 */
export async function startMtlsProxy(engineAddress: string, certs: TestCertificates): Promise<EngineProxy> {
  const [host, port] = hostAndPort(engineAddress);
  const [key, cert, ca] = await Promise.all([certs.serverKey, certs.serverCert, certs.caCert].map((f) => readFile(f)));
  const counts = { accepted: 0, refused: 0 };
  const open = new Set<net.Socket>();
  const server = tls.createServer(
    { key, cert, ca, requestCert: true, rejectUnauthorized: true, ALPNProtocols: ['h2'] },
    (client) => {
      counts.accepted++;
      const engine = net.connect(port, host);
      open.add(client).add(engine);
      const end = () => {
        client.destroy();
        engine.destroy();
        open.delete(client);
        open.delete(engine);
      };
      client.on('error', end).on('close', end);
      engine.on('error', end).on('close', end);
      client.pipe(engine).pipe(client);
    },
  );
  server.on('tlsClientError', () => counts.refused++);
  return proxyHandle(await listening(server), counts, server, () => {
    for (const socket of open) socket.destroy();
  });
}

/** HTTP/2 headers a proxy never forwards as they are (pseudo-headers and per-hop ones). */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host']);

function forwardable(headers: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers))
    if (!name.startsWith(':') && !HOP_HEADERS.has(name) && value !== undefined) out[name] = value;
  return out;
}

/**
 * An API-key endpoint in front of `engineAddress`: TLS with the test CA (the SDK turns TLS on
 * with an API key), and on each gRPC call the `authorization: Bearer <key>` the SDK sends. A
 * wrong or missing key is answered UNAUTHENTICATED (trailers only, as a gRPC server does); a
 * right one is carried to the engine as one HTTP/2 stream per call: headers, messages, trailers.
 */
export async function startApiKeyProxy(
  engineAddress: string,
  certs: TestCertificates,
  apiKey: string,
): Promise<EngineProxy> {
  const [key, cert] = await Promise.all([certs.serverKey, certs.serverCert].map((f) => readFile(f)));
  const counts = { accepted: 0, refused: 0 };
  // One HTTP/2 connection to the engine for all calls, made again if the engine closed it.
  let engine: http2.ClientHttp2Session | null = null;
  const toEngine = (): http2.ClientHttp2Session => {
    if (!engine || engine.closed || engine.destroyed) {
      engine = http2.connect(`http://${engineAddress}`);
      engine.on('error', () => {});
    }
    return engine;
  };
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createSecureServer({ key, cert, allowHTTP1: false });
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    if (headers.authorization !== `Bearer ${apiKey}`) {
      counts.refused++;
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': '16',
          'grpc-message': 'the API key is not valid',
        },
        { endStream: true },
      );
      return;
    }
    counts.accepted++;
    const upstream = toEngine().request({
      ':method': 'POST',
      ':path': headers[':path'],
      ':scheme': 'http',
      ':authority': engineAddress,
      ...forwardable(headers),
    });
    upstream.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('close', () => {
      if (!upstream.closed) upstream.close(http2.constants.NGHTTP2_CANCEL);
    });
    upstream.on('response', (answer, flags) => {
      // A refusal comes trailers-only (its status in the headers, nothing after): passed on as such.
      const only = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      stream.respond(
        { ':status': answer[':status'], ...forwardable(answer) },
        only ? { endStream: true } : { waitForTrailers: true },
      );
    });
    let trailers: http2.OutgoingHttpHeaders = {};
    upstream.on('trailers', (t) => (trailers = forwardable(t)));
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    stream.pipe(upstream);
    upstream.pipe(stream);
  });
  return proxyHandle(await listening(server), counts, server, () => {
    for (const session of sessions) session.destroy();
    engine?.destroy();
  });
}

/**
 * Why a service could not start when the engine would not take it, in the one line an operator
 * acts on: a certificate refused, an API key refused, a CA that does not match, nothing
 * listening, a credential file that cannot be read. The SDK's own errors do not say which (its
 * gRPC client says only "Failed to connect before the deadline"), so the engine is asked again the
 * way the service asked it: a TLS handshake with the same credentials, then one call. The line
 * names the address and the variables to check, never a file's path or a credential.
 */
import net from 'node:net';
import os from 'node:os';
import tls from 'node:tls';
import { Connection, isGrpcServiceError, ServiceError } from '@temporalio/client';
import { loadConfig } from '../domain/config';
import { engineConnectOptions, type EngineConnectOptions } from './engine-connection';

/** Long enough for an engine across a WAN; a refusal arrives well within it. */
const PROBE_TIMEOUT_MS = 5000;

/** The variables whose value is a file envconfig reads at start. */
const FILE_VARIABLES = [
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_CONFIG_FILE',
];

/**
 * The line for `err` when the engine does not take this client, or null when it does (the
 * failure was something else, which keeps its own output).
 */
export async function engineFailureLine(err: unknown, env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  return (await engineFailure(err, env))?.line ?? null;
}

/**
 * The same, and whether the engine is only not up yet (nothing listens, no answer yet, its
 * namespace not made yet: an engine still starting), which waiting may mend; any other reason
 * (a certificate, a key, a CA, a file) is a refusal that waiting does not.
 */
export async function engineFailure(
  err: unknown,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ line: string; notUpYet: boolean } | null> {
  let address: string;
  let namespace: string;
  try {
    ({ temporalAddress: address, temporalNamespace: namespace } = loadConfig(env, {
      cwd: process.cwd(),
      hostname: os.hostname(),
    }));
  } catch {
    return null; // the configuration itself is wrong: its own error says how
  }
  const failure = (reason: string) => ({
    line: `cannot reach the Temporal engine at ${address}: ${reason}`,
    notUpYet: NOT_UP_YET.includes(reason) || reason === missingNamespace(namespace),
  });
  const unreadable = unreadableFile(err, env);
  if (unreadable) return failure(unreadable);
  let options: EngineConnectOptions;
  try {
    options = engineConnectOptions(address, env);
  } catch (settingsErr) {
    const first = (settingsErr instanceof Error ? settingsErr.message : String(settingsErr)).split('\n')[0];
    return failure(unreadableFile(settingsErr, env) ?? `its connection settings cannot be read (${first})`);
  }
  const problem = (await transportProblem(address, options)) ?? (await callProblem(options, namespace));
  return problem ? failure(problem) : null;
}

function unreadableFile(err: unknown, env: NodeJS.ProcessEnv): string | null {
  const { code, path } = (err ?? {}) as NodeJS.ErrnoException;
  if (!code || !path) return null;
  const variable = FILE_VARIABLES.find((name) => env[name] === path);
  return variable ? `${variable} names a file that cannot be read (${code})` : null;
}

const usesTls = (o: EngineConnectOptions) => (o.tls === undefined ? o.apiKey !== undefined : o.tls !== false);

/** What an HTTP/2 server sends first: a SETTINGS frame (type 0x4 in the fourth byte of its header). */
const isHttp2Settings = (bytes: Buffer) => bytes.length >= 4 && bytes[3] === 0x04;
const HTTP2_PREFACE = Buffer.concat([
  Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
  Buffer.from([0, 0, 0, 0x04, 0, 0, 0, 0, 0]), // an empty SETTINGS frame
]);

/** Whether an HTTP/2 server answers (its SETTINGS frame) at a Unix socket within `ms`. */
export function http2AnswersAt(socketPath: string, ms = 2_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    let received = Buffer.alloc(0);
    const done = (answered: boolean) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.destroy();
      resolve(answered);
    };
    const timer = setTimeout(() => done(false), ms);
    socket.once('connect', () => socket.write(HTTP2_PREFACE));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 4) done(isHttp2Settings(received));
    });
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'nothing listens there (connection refused)',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name does not resolve',
  EHOSTUNREACH: 'there is no route to it',
  ENETUNREACH: 'there is no route to it',
  ETIMEDOUT: `it does not answer (no reply within ${PROBE_TIMEOUT_MS / 1000} s)`,
};

/**
 * Connects as the service does and starts HTTP/2 on it: null when an HTTP/2 server answers,
 * else why not. A TLS 1.3 server refuses a client certificate after the client's side of the
 * handshake is done, so its refusal (an alert, or the connection closed) comes after it.
 */
function transportProblem(address: string, o: EngineConnectOptions): Promise<string | null> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(at + 1));
  const secure = usesTls(o);
  const t = typeof o.tls === 'object' ? o.tls : {};
  const withCertificate = t.clientCertPair !== undefined;
  return new Promise((resolve) => {
    const socket = secure
      ? tls.connect({
          host,
          port,
          servername: t.serverNameOverride ?? (net.isIP(host) ? undefined : host),
          ca: t.serverRootCACertificate ? [Buffer.from(t.serverRootCACertificate)] : undefined,
          cert: t.clientCertPair ? Buffer.from(t.clientCertPair.crt) : undefined,
          key: t.clientCertPair ? Buffer.from(t.clientCertPair.key) : undefined,
          ALPNProtocols: ['h2'],
          // Checked below, to say which check failed.
          rejectUnauthorized: false,
        })
      : net.connect({ host, port });
    let handshaken = false;
    let received = Buffer.alloc(0);
    const done = (reason: string | null) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.destroy();
      resolve(reason);
    };
    const timer = setTimeout(() => done(NETWORK_REASONS.ETIMEDOUT!), PROBE_TIMEOUT_MS);
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      handshaken = true;
      if (socket instanceof tls.TLSSocket) {
        const identity = () =>
          tls.checkServerIdentity(t.serverNameOverride ?? host, socket.getPeerCertificate()) as
            NodeJS.ErrnoException | undefined;
        const untrusted = socket.authorizationError ?? identity()?.code;
        if (untrusted)
          return done(
            `this client does not trust the engine's certificate (${untrusted}): check TEMPORAL_TLS_SERVER_CA_CERT_PATH and TEMPORAL_TLS_SERVER_NAME`,
          );
      }
      socket.write(HTTP2_PREFACE);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4) return;
      if (isHttp2Settings(received)) return done(null);
      done(
        secure
          ? 'it does not answer gRPC over TLS there'
          : 'it does not answer gRPC without TLS there: does it want TLS (TEMPORAL_TLS=true)?',
      );
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? '';
      const alert = /^ERR_SSL_TLSV1[0-9]?_ALERT_(.*)$/.exec(code)?.[1];
      if (alert === 'CERTIFICATE_REQUIRED' || (alert && !withCertificate))
        return done(
          'the engine asks for a client certificate and none was given (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH)',
        );
      if (alert) return done(`the engine refused this client's certificate (TLS alert: ${alert.toLowerCase()})`);
      if (NETWORK_REASONS[code]) return done(NETWORK_REASONS[code]!);
      if (handshaken && withCertificate) return done(refusedCertificate);
      if (handshaken && secure) return done(wantsCertificate);
      done(secure && !handshaken ? `the TLS handshake failed (${code || err.message})` : closed(secure));
    });
    socket.once('close', () =>
      done(handshaken && secure ? (withCertificate ? refusedCertificate : wantsCertificate) : closed(secure)),
    );
  });
}

const refusedCertificate =
  "the engine refused this client's certificate (it closed the connection after the handshake)";
/**
 * A TLS endpoint that completes the handshake and then closes, without an alert, for a client with
 * no certificate: one that wants a certificate does that (a proxy in front, or TLS 1.3 refusing
 * after the client's side of the handshake). An engine still starting refuses the connection
 * instead; this is a refusal, said at once. (The bundled engine's own front is waited for behind
 * it before any client connects: client/launcher/engine-guard.ts.)
 */
const wantsCertificate =
  'it closed the connection after the TLS handshake: does it want a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH)?';
const closed = (secure: boolean) =>
  secure
    ? 'it closed the connection: does it want a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH)?'
    : 'it closed the connection: does it want TLS (TEMPORAL_TLS=true)?';

/** One call as the service makes it, then one on its namespace: null when both are answered, else why not. */
async function callProblem(o: EngineConnectOptions, namespace: string): Promise<string | null> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ ...o, connectTimeout: PROBE_TIMEOUT_MS });
    await connection.workflowService.describeNamespace({ namespace });
    return null;
  } catch (err) {
    const grpc = err instanceof ServiceError ? err.cause : err;
    if (!isGrpcServiceError(grpc)) return NO_CALL_ANSWER;
    const keyed = o.apiKey !== undefined;
    if (grpc.code === 16)
      return `the engine refused ${keyed ? 'the API key in TEMPORAL_API_KEY' : "this client's credentials"} (UNAUTHENTICATED)`;
    if (grpc.code === 7)
      return `${keyed ? 'the API key in TEMPORAL_API_KEY' : "this client's certificate"} gives no access to namespace ${namespace} (PERMISSION_DENIED)`;
    if (grpc.code === 5) return missingNamespace(namespace);
    return `a call failed (${grpc.details || `gRPC status ${grpc.code}`})`;
  } finally {
    await connection?.close().catch(() => {});
  }
}

const NO_CALL_ANSWER = `it does not answer a call within ${PROBE_TIMEOUT_MS / 1000} s`;
const missingNamespace = (namespace: string) => `the namespace ${namespace} does not exist there (TEMPORAL_NAMESPACE)`;

/** The reasons an engine that is still starting gives (see engineFailure). */
const NOT_UP_YET = [
  NETWORK_REASONS.ECONNREFUSED,
  NETWORK_REASONS.ETIMEDOUT,
  NETWORK_REASONS.EHOSTUNREACH,
  NO_CALL_ANSWER,
  closed(true),
  closed(false),
];

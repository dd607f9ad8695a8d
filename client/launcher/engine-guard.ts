/**
 * The bundled engine, closed to everyone without the service's credentials. The dev
 * server takes no credentials of its own, so it runs in a network namespace of its own
 * (bubblewrap), where its gRPC port, Web UI, HTTP API and metrics are reachable only through two
 * Unix sockets in a 0700 folder of the service's account. In front of them, on the
 * loopback ports the operator knows:
 * - gRPC behind mutual TLS: a private CA (client/launcher/engine-credentials.ts), a server certificate and one client
 *   certificate, which the worker, the gateway and the launcher present (through the standard
 *   `TEMPORAL_TLS_*` variables: worker/engine-connection.ts). No certificate, no handshake.
 * - the Web UI behind HTTP basic authentication with the operator token as the password (it can
 *   terminate, signal and reset workflows, as the gRPC port can).
 * Agents never see the data folder (the sandbox hides it) and have no route to the host's
 * loopback (their own network namespace).
 */
import { execFile } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { lstat, mkdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { http2AnswersAt } from '../../worker/engine-failure';
import type { EngineCredentials } from './engine-credentials';

const run = promisify(execFile);

/**
 * The engine's two Unix sockets (gRPC, Web UI), in a folder only the service's account enters.
 * Not under the data folder: a socket's path has at most 107 bytes, which a deep data folder
 * (a checkout in a long path) would pass; the folder's name comes from the data folder's own.
 */
export function engineSockets(dataDir: string): { dir: string; grpc: string; ui: string } {
  const dir = path.join(
    os.tmpdir(),
    `tws-engine-${createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16)}`,
  );
  return { dir, grpc: path.join(dir, 'grpc.sock'), ui: path.join(dir, 'ui.sock') };
}

/** Makes the socket folder, or proves the one there is this account's own and closed to others; refuses otherwise. */
async function ownSocketFolder(dir: string): Promise<void> {
  await mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const found = await lstat(dir);
  const uid = process.getuid?.() ?? found.uid;
  if (!found.isDirectory() || found.uid !== uid || (found.mode & 0o077) !== 0) {
    throw new Error(
      `the engine's socket folder ${dir} is not this account's own 0700 folder; remove it and start again`,
    );
  }
}

/** Ports the dev server uses inside its own network namespace (nobody outside reaches them). */
const INNER_GRPC_PORT = 7233;
const INNER_UI_PORT = 8233;

/**
 * The command that runs the dev server in a network namespace of its own, its gRPC port and Web
 * UI bridged to the Unix sockets (socat). `--die-with-parent` and a pid namespace: when the
 * supervised bubblewrap goes, the server and the bridges go with it.
 */
export async function guardedEngineCommand(
  temporalCli: string,
  serverArgs: string[],
  dataDir: string,
): Promise<{ command: string; args: string[] }> {
  const sockets = engineSockets(dataDir);
  await ownSocketFolder(sockets.dir);
  // The socket paths come in as arguments ($1, $2), never spliced into the script.
  const bridge = (arg: string, port: number) =>
    `socat "UNIX-LISTEN:${arg},fork,unlink-early,mode=600" TCP:127.0.0.1:${port} 2>/dev/null &`;
  const script = `${bridge('$1', INNER_GRPC_PORT)} ${bridge('$2', INNER_UI_PORT)} shift 2; exec "$@"`;
  return {
    command: 'bwrap',
    args: [
      '--unshare-net',
      '--unshare-pid',
      '--die-with-parent',
      '--bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--',
      'sh',
      '-c',
      script,
      'sh',
      sockets.grpc,
      sockets.ui,
      temporalCli,
      ...serverArgs,
      '--ip',
      '127.0.0.1',
      '--port',
      String(INNER_GRPC_PORT),
      '--ui-port',
      String(INNER_UI_PORT),
    ],
  };
}

/**
 * Why the guard cannot run here (a tool missing, or no network namespace to be had), in one line
 * that names the way out; null when it can.
 */
export async function engineGuardProblem(): Promise<string | null> {
  for (const tool of ['bwrap', 'socat', 'openssl']) {
    if (
      !(await run('sh', ['-c', `command -v ${tool}`]).then(
        () => true,
        () => false,
      ))
    )
      return `the Temporal dev server's guard needs ${tool} (scripts/setup.sh installs it as root); TWS_ENGINE_GUARD=open runs the engine unguarded, open to every process of this host`;
  }
  const netns = await run('bwrap', ['--unshare-net', '--dev-bind', '/', '/', 'true']).then(
    () => true,
    () => false,
  );
  if (!netns)
    return `the Temporal dev server's guard needs a network namespace, which bubblewrap cannot make here; TWS_ENGINE_GUARD=open runs the engine unguarded, open to every process of this host`;
  return null;
}

/**
 * Waits until the dev server answers behind the front (on its Unix socket): until then the front
 * completes a client's handshake and closes it (its bridge finds nothing listening), which a
 * client cannot tell from a refused certificate. Clients come only once the engine answers.
 */
export async function waitForEngineBehindFront(
  dataDir: string,
  isDead: () => boolean,
  timeoutMs = 60_000,
): Promise<void> {
  const { grpc } = engineSockets(dataDir);
  const deadline = Date.now() + timeoutMs;
  while (!(await http2AnswersAt(grpc))) {
    if (isDead()) throw new Error('the Temporal server exited during start-up');
    if (Date.now() > deadline)
      throw new Error(`the Temporal dev server did not answer within ${timeoutMs / 1000} s of its start`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface EngineFront {
  close(): Promise<void>;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether a request's basic authentication carries the operator token as its password. */
function operatorAuthorized(header: string | undefined, operatorToken: string): boolean {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)$/.exec(header ?? '');
  if (!match) return false;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const password = decoded.slice(decoded.indexOf(':') + 1);
  return decoded.includes(':') && timingSafeEqual(digest(password), digest(operatorToken));
}

/**
 * The fronts on the host's loopback: gRPC behind mutual TLS (a client without the CA's client
 * certificate is refused in the handshake), the Web UI behind the operator token. Each accepted
 * connection or request is carried to the engine's socket, bytes unchanged.
 */
export async function startEngineFront(opts: {
  dataDir: string;
  host: string;
  grpcPort: number;
  uiPort: number;
  credentials: EngineCredentials;
  operatorToken: string;
}): Promise<EngineFront> {
  const sockets = engineSockets(opts.dataDir);
  const c = opts.credentials;
  const [key, cert, ca] = await Promise.all([readFile(c.serverKey), readFile(c.serverCert), readFile(c.caCert)]);
  const open = new Set<net.Socket>();
  const grpc = tls.createServer(
    { key, cert, ca, requestCert: true, rejectUnauthorized: true, ALPNProtocols: ['h2'], minVersion: 'TLSv1.2' },
    (client) => {
      const engine = net.connect(sockets.grpc);
      const end = () => {
        client.destroy();
        engine.destroy();
      };
      open.add(client);
      client.on('close', () => open.delete(client));
      client.on('error', end).on('close', end);
      engine.on('error', end).on('close', end);
      client.pipe(engine).pipe(client);
    },
  );
  grpc.on('tlsClientError', () => {}); // a client without the certificate: refused, nothing to log per attempt
  const ui = http.createServer((req, res) => {
    if (!operatorAuthorized(req.headers.authorization, opts.operatorToken)) {
      res.writeHead(401, {
        'WWW-Authenticate': 'Basic realm="task-workspaces Temporal UI (password: the operator token)"',
        'Content-Type': 'text/plain',
      });
      res.end('The Temporal UI needs the operator token as the password.\n');
      return;
    }
    const headers = { ...req.headers };
    delete headers.authorization; // the engine's UI needs none, and gets none of ours
    const upstream = http.request({ socketPath: sockets.ui, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end('The Temporal UI does not answer.\n');
    });
    req.pipe(upstream);
  });
  const listen = (server: net.Server, port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, opts.host, () => resolve());
    });
  await listen(grpc, opts.grpcPort);
  await listen(ui, opts.uiPort);
  return {
    async close() {
      for (const socket of open) socket.destroy();
      ui.closeAllConnections();
      await Promise.all([grpc, ui].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

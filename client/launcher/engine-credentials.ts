/**
 * The bundled engine's private CA, its server certificate and the service's client certificate,
 * made once per data folder with openssl, and the standard variables the services present them
 * through. client/launcher/engine-guard.ts fronts the engine with them.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The name the engine's certificate carries; clients ask for it (TEMPORAL_TLS_SERVER_NAME). */
const ENGINE_SERVER_NAME = 'tws-engine';

export interface EngineCredentials {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function engineCredentialPaths(dataDir: string): EngineCredentials {
  const dir = path.join(dataDir, 'engine-tls');
  const at = (name: string) => path.join(dir, name);
  return {
    dir,
    caCert: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
  };
}

/**
 * The engine's CA, server and client certificates, made once per data folder (kept across
 * restarts; keys 0600 in a 0700 folder). A half-made set (a crash while making it) is made again.
 */
export async function ensureEngineCredentials(dataDir: string): Promise<EngineCredentials> {
  const c = engineCredentialPaths(dataDir);
  if ([c.caCert, c.serverCert, c.serverKey, c.clientCert, c.clientKey].every((f) => existsSync(f))) return c;
  await rm(c.dir, { recursive: true, force: true });
  await mkdir(c.dir, { recursive: true, mode: 0o700 });
  const caKey = path.join(c.dir, 'ca.key');
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...key,
    '-keyout',
    caKey,
    '-out',
    c.caCert,
    '-days',
    '3650',
    '-subj',
    '/CN=task-workspaces engine CA',
  ]);
  for (const [name, cert, certKey, usage] of [
    ['server', c.serverCert, c.serverKey, `subjectAltName=DNS:${ENGINE_SERVER_NAME}\nextendedKeyUsage=serverAuth\n`],
    ['client', c.clientCert, c.clientKey, 'extendedKeyUsage=clientAuth\n'],
  ] as const) {
    const csr = path.join(c.dir, `${name}.csr`);
    const ext = path.join(c.dir, `${name}.ext`);
    await writeFile(ext, `basicConstraints=CA:FALSE\n${usage}`);
    await run('openssl', [
      'req',
      ...key,
      '-keyout',
      certKey,
      '-out',
      csr,
      '-subj',
      `/CN=${name === 'server' ? ENGINE_SERVER_NAME : 'task-workspaces service'}`,
    ]);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      c.caCert,
      '-CAkey',
      caKey,
      '-CAcreateserial',
      '-out',
      cert,
      '-days',
      '3650',
      '-extfile',
      ext,
    ]);
    await rm(csr);
    await rm(ext);
  }
  for (const f of [caKey, c.serverKey, c.clientKey]) await chmod(f, 0o600);
  return c;
}

/** What the services connect to the guarded engine with (worker/engine-connection.ts reads it). */
export function engineClientEnv(c: EngineCredentials): Record<string, string> {
  return {
    TEMPORAL_TLS: 'true',
    TEMPORAL_TLS_CLIENT_CERT_PATH: c.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: c.clientKey,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: c.caCert,
    TEMPORAL_TLS_SERVER_NAME: ENGINE_SERVER_NAME,
  };
}

/**
 * Why PostgreSQL does not take this service, in one line that names PostgreSQL and
 * `DATABASE_URL` and never its password or a file's path, for the start-up of the worker, the
 * gateway and the set-up. `outage`: it does not answer (nothing listens, no answer, starting up),
 * which waiting may mend; otherwise it refuses this service (its user or password, its database's
 * name, its TLS certificate, a file the URL names), which waiting does not.
 */
import { outageOf } from '../domain/outage';

/** Node's TLS verification failures: the server's certificate is not one the URL's CA vouches for. */
const UNTRUSTED_CERTIFICATE = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
]);

/** The host name the URL connects to. */
function hostOf(databaseUrl: string): string {
  try {
    return new URL(databaseUrl).hostname || 'localhost';
  } catch {
    return 'the host in DATABASE_URL';
  }
}

/** Where the URL points, without its user or password: `host:port/database`. */
function placeOf(databaseUrl: string): string {
  try {
    const u = new URL(databaseUrl);
    return `${u.hostname || 'localhost'}:${u.port || '5432'}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
  } catch {
    return 'the address in DATABASE_URL';
  }
}

/** The server's certificate, trusted, is made out to other names than the one the URL connects to (verify-full). */
function nameMismatch(e: { host?: unknown; cert?: unknown }, databaseUrl: string): string {
  const expected = typeof e.host === 'string' && e.host ? e.host : hostOf(databaseUrl);
  const names = (e.cert as { subjectaltname?: unknown } | undefined)?.subjectaltname;
  const named = typeof names === 'string' && names ? `; it names ${names}` : '';
  return `its TLS certificate does not match the name DATABASE_URL connects to (expected ${expected}${named}): connect by a name the certificate names, or give the server a certificate for ${expected}`;
}

function reasonOf(err: unknown, databaseUrl: string): { reason: string; outage: boolean } | null {
  const e = (err ?? {}) as { code?: unknown; message?: unknown; syscall?: unknown; host?: unknown; cert?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (code === 'ECONNREFUSED') return { reason: 'nothing listens there (connection refused)', outage: true };
  if (code === 'ENOTFOUND') return { reason: 'its host name does not resolve', outage: false };
  // pg_hba.conf has no entry (or a reject) for a connection without TLS: the user and password were never asked.
  if (code === '28000' && /no encryption/.test(message))
    return {
      reason:
        "it requires TLS, and DATABASE_URL does not ask for it: add sslmode=verify-full and sslrootcert (the server's CA)",
      outage: false,
    };
  if (code === '28P01' || code === '28000')
    return { reason: 'it refused the user or password in DATABASE_URL', outage: false };
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return { reason: nameMismatch(e, databaseUrl), outage: false };
  if (code === '3D000') return { reason: 'the database DATABASE_URL names does not exist', outage: false };
  if (UNTRUSTED_CERTIFICATE.has(code) || /unable to verify the first certificate/.test(message))
    return {
      reason: `this service does not trust its TLS certificate (${code || 'unverified'}): check sslrootcert (the server's CA) and sslmode in DATABASE_URL`,
      outage: false,
    };
  if (/does not support SSL connections/.test(message))
    return { reason: 'it does not speak TLS, and DATABASE_URL asks for it (sslmode)', outage: false };
  // pg reads sslrootcert, sslcert and sslkey when it parses the URL: a file it cannot read.
  if ((code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') && e.syscall === 'open')
    return {
      reason: 'a file DATABASE_URL names (sslrootcert, sslcert or sslkey) cannot be read',
      outage: false,
    };
  if (outageOf(err) === 'database') return { reason: 'it does not answer', outage: true };
  return null;
}

export function databaseFailure(err: unknown, databaseUrl: string): { line: string; outage: boolean } | null {
  const found = reasonOf(err, databaseUrl);
  if (!found) return null;
  return { line: `cannot reach PostgreSQL at ${placeOf(databaseUrl)} (DATABASE_URL): ${found.reason}`, ...found };
}

/** The error a start-up refuses with: its message is the one line said, with no stack. */
export class StartupRefusal extends Error {}

/**
 * At a service's start: PostgreSQL asked once. A refusal stops the start in one line; an outage
 * is said (the service runs on and serves once it answers); any other failure is thrown as it is.
 */
export async function databaseAtStart(
  query: () => Promise<unknown>,
  databaseUrl: string,
  onOutage: (line: string) => void,
): Promise<void> {
  try {
    await query();
  } catch (err) {
    const failure = databaseFailure(err, databaseUrl);
    if (!failure) throw err;
    if (!failure.outage) throw new StartupRefusal(failure.line);
    onOutage(failure.line);
  }
}

/**
 * The connections to SSH targets. The host is trusted only when it presents a key pinned in the
 * target's known_hosts lines, never on first use; a connection is pooled per target and process.
 * Every failure is a typed refusal whose reason is a short classified word: no path, host name,
 * key or command output ever goes into an error. What runs on them: ssh/remote-exec.ts.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Client, ServerHostKeyAlgorithm } from 'ssh2';
import { parseKnownHosts, pinnedHostKeys } from './known-hosts';

export interface SshTarget {
  id: string;
  host: string;
  port: number;
  user: string;
  /** On the worker's host; read at each connect, never copied anywhere. */
  privateKeyPath: string;
  /** known_hosts lines pinning the host key(s) */
  knownHosts: string;
  workspaceRoot: string;
}

export type SshRefusalCode = 'ssh_target_unavailable' | 'ssh_host_key_mismatch';

export class SshRefusal extends Error {
  constructor(
    readonly code: SshRefusalCode,
    readonly reason: string,
  ) {
    super(`${code}: ${reason}`);
    this.name = 'SshRefusal';
  }
}

// sshd's own LoginGraceTime is 120 s; a target that has not finished its handshake in 10 s is
// treated as down, so a launch refuses promptly instead of holding its caller.
const READY_TIMEOUT_MS = 10_000;
// A connection that stops answering (the target lost power, a NAT forgot it) is dropped after
// about a minute even when idle, so the next use reconnects rather than waiting on a dead socket.
const KEEPALIVE_INTERVAL_MS = 15_000;
const KEEPALIVE_COUNT_MAX = 3;
// sshd's MaxSessions (default 10) bounds the channels open on one connection; past it an exec is
// refused. Eight leaves room for an operator's own session on the same account.
const CHANNELS_PER_CONNECTION = 8;

/** Ends every pooled connection (tests, worker shutdown); the next runRemote connects afresh. */
export async function closeSshConnections(): Promise<void> {
  const all = [...pool.values()];
  pool.clear();
  await Promise.all(
    all.map((pending) =>
      pending.then(
        (connection) => connection.close(),
        () => {},
      ),
    ),
  );
}

/** Ends the pooled connection of one target, if any (the gateway's one-off check of a target it registers). */
export async function closeSshConnection(targetId: string): Promise<void> {
  const mine = [...pool].filter(([key]) => key.startsWith(`${targetId}\n`));
  for (const [key] of mine) pool.delete(key);
  await Promise.all(
    mine.map(([, pending]) =>
      pending.then(
        (connection) => connection.close(),
        () => {},
      ),
    ),
  );
}

/** One connection to a target, with a small queue in front of its channels. */
export class PooledConnection {
  lost = false;
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly client: Client) {}

  async acquire(): Promise<void> {
    if (this.active < CHANNELS_PER_CONNECTION) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Hands the slot to the next waiter, if any (so the count never dips below the queue's demand). */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }

  async close(): Promise<void> {
    if (this.lost) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.client.destroy();
        resolve();
      }, 2_000);
      this.client.once('close', () => {
        clearTimeout(force);
        resolve();
      });
      this.client.end();
    });
  }
}

/**
 * One connection per target per process, keyed by the target's id and its settings (so changed
 * settings connect anew and end the old connection). A connection that closes or fails leaves
 * the pool at once; a connect that fails is not kept, so each use after an outage tries again.
 */
const pool = new Map<string, Promise<PooledConnection>>();

function poolKey(target: SshTarget): string {
  const settings = createHash('sha256')
    .update(JSON.stringify([target.host, target.port, target.user, target.privateKeyPath, target.knownHosts]))
    .digest('hex');
  return `${target.id}\n${settings}`;
}

export function connectionFor(target: SshTarget): Promise<PooledConnection> {
  const key = poolKey(target);
  const existing = pool.get(key);
  if (existing) return existing;
  for (const [other, stale] of pool) {
    if (other.startsWith(`${target.id}\n`)) {
      pool.delete(other);
      stale.then(
        (connection) => connection.close(),
        () => {},
      );
    }
  }
  const forget = () => {
    if (pool.get(key) === pending) pool.delete(key);
  };
  const pending = connect(target, forget);
  pool.set(key, pending);
  pending.catch(forget);
  return pending;
}

/**
 * A connection of its own, outside the pool, for a one-off check: a probe with settings not yet
 * stored neither replaces nor closes the pooled connection work in this process runs on (nor is
 * closed by it). The caller closes it.
 */
export function unpooledConnection(target: SshTarget): Promise<PooledConnection> {
  return connect(target, () => {});
}

async function connect(target: SshTarget, onLost: () => void): Promise<PooledConnection> {
  const pinned = pinnedHostKeys(parseKnownHosts(target.knownHosts), target.host, target.port);
  if (pinned.keys.length === 0) throw new SshRefusal('ssh_host_key_mismatch', 'no_pinned_host_key');
  let privateKey: Buffer;
  try {
    privateKey = await readFile(target.privateKeyPath);
  } catch {
    throw new SshRefusal('ssh_target_unavailable', 'key_unreadable');
  }
  // Loaded at the first connection, not with the module: ssh2 sets up its WebAssembly crypto when
  // loaded, about 13 MB resident (17 MB outside V8's heap) in every worker and gateway, SSH
  // targets or none (measured: `require('ssh2')` alone, 39 → 52 MB RSS).
  const { Client: SshClient } = await import('ssh2');
  const client = new SshClient();
  let hostKeyRefused = false;
  return new Promise<PooledConnection>((resolve, reject) => {
    let ready = false;
    const connection = new PooledConnection(client);
    client.on('error', (err: Error & { level?: string; code?: string }) => {
      if (!ready) return reject(connectFailure(err, hostKeyRefused));
      // A pooled connection that failed (a keepalive unanswered, a protocol error) is not used again.
      connection.lost = true;
      onLost();
      client.destroy();
    });
    client.on('close', () => {
      connection.lost = true;
      onLost();
      if (!ready) reject(new SshRefusal('ssh_target_unavailable', 'connection_lost'));
    });
    client.once('ready', () => {
      ready = true;
      resolve(connection);
    });
    try {
      client.connect({
        host: target.host,
        port: target.port,
        username: target.user,
        privateKey,
        readyTimeout: READY_TIMEOUT_MS,
        keepaliveInterval: KEEPALIVE_INTERVAL_MS,
        keepaliveCountMax: KEEPALIVE_COUNT_MAX,
        // Offer only the pinned key types, so a server with several host keys presents a pinned one.
        algorithms: { serverHostKey: pinned.algorithms as ServerHostKeyAlgorithm[] },
        hostVerifier: (key: Buffer) => {
          const known = pinned.keys.some((pin) => pin.equals(key));
          if (!known) hostKeyRefused = true;
          return known;
        },
      });
    } catch {
      // ssh2 parses the key inside connect: an encrypted or malformed key file throws here.
      client.destroy();
      reject(new SshRefusal('ssh_target_unavailable', 'key_unusable'));
    }
  });
}

/** What kept a connect from succeeding, by ssh2's error level and the socket's code (never its message). */
function connectFailure(err: Error & { level?: string; code?: string }, hostKeyRefused: boolean): SshRefusal {
  // A failed key exchange after offering only the pinned key types means the server could not
  // show a pinned key: it is not (provably) the host the operator pinned, and retrying will not change that.
  if (hostKeyRefused) return new SshRefusal('ssh_host_key_mismatch', 'host_key_mismatch');
  if (err.level === 'handshake') return new SshRefusal('ssh_host_key_mismatch', 'host_key_not_offered');
  if (err.level === 'client-authentication') return new SshRefusal('ssh_target_unavailable', 'auth_failed');
  if (err.level === 'client-timeout' || err.code === 'ETIMEDOUT')
    return new SshRefusal('ssh_target_unavailable', 'timeout');
  if (err.level === 'client-dns') return new SshRefusal('ssh_target_unavailable', 'dns_failed');
  if (err.code === 'ECONNREFUSED') return new SshRefusal('ssh_target_unavailable', 'connect_refused');
  if (err.code === 'EHOSTUNREACH' || err.code === 'ENETUNREACH')
    return new SshRefusal('ssh_target_unavailable', 'unreachable');
  return new SshRefusal('ssh_target_unavailable', 'connection_lost');
}

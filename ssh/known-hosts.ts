/**
 * The host keys an SSH target is pinned to, read from known_hosts lines an operator gives
 * (`host keytype base64`, `[host]:port keytype base64`, comma-separated names, OpenSSH's hashed
 * `|1|salt|hash` names). Pure: no file, no network. An entry this cannot match exactly (a
 * wildcard or negated pattern, a certificate authority, a key type the client does not speak) is
 * skipped, never widened: the transport trusts only a key it finds here, and nothing on first use.
 */
import { createHmac } from 'node:crypto';

/** A key type's host-key algorithms, in the order the client offers them (an RSA key signs with SHA-2 first). */
const HOST_KEY_ALGORITHMS: Record<string, string[]> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
};

export interface KnownHostEntry {
  /** The names as written: plain (`example.org`, `[10.0.0.5]:2222`) or hashed (`|1|salt|hash`). */
  names: string[];
  keyType: string;
  /** The public key blob (the base64 field decoded), as the server presents it. */
  key: Buffer;
  revoked: boolean;
}

/** Every entry of these lines that could be matched; the rest (comments, blanks, what cannot be matched exactly) is skipped. */
export function parseKnownHosts(text: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const fields = raw.trim().split(/\s+/);
    if (fields[0] === undefined || fields[0] === '' || fields[0].startsWith('#')) continue;
    let revoked = false;
    if (fields[0].startsWith('@')) {
      // A certificate authority vouches for keys it signs: not a pin. A revoked key is remembered to refuse it.
      if (fields[0] !== '@revoked') continue;
      revoked = true;
      fields.shift();
    }
    const [names, keyType, base64] = fields;
    if (names === undefined || keyType === undefined || base64 === undefined || !(keyType in HOST_KEY_ALGORITHMS))
      continue;
    const key = decodeKeyBlob(base64, keyType);
    if (!key) continue;
    const exact = names.split(',').filter((name) => name !== '' && !/[*?!]/.test(name));
    if (exact.length > 0) entries.push({ names: exact, keyType, key, revoked });
  }
  return entries;
}

/** The blob of a base64 key field, when it is well formed and names the key type its line says. */
function decodeKeyBlob(base64: string, keyType: string): Buffer | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return null;
  const blob = Buffer.from(base64, 'base64');
  if (blob.length < 4) return null;
  const typeLength = blob.readUInt32BE(0);
  if (typeLength > blob.length - 4 || blob.subarray(4, 4 + typeLength).toString('latin1') !== keyType) return null;
  return blob;
}

/** How known_hosts names a host: bare on the default port, `[host]:port` on any other. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

function nameMatches(name: string, wanted: string): boolean {
  if (!name.startsWith('|1|')) return name.toLowerCase() === wanted.toLowerCase();
  const [, , salt, hash] = name.split('|');
  if (salt === undefined || hash === undefined) return false;
  return createHmac('sha1', Buffer.from(salt, 'base64')).update(wanted).digest('base64') === hash;
}

export interface PinnedHostKeys {
  keys: Buffer[];
  /** The host-key algorithms to offer the server, so one with several host keys presents a pinned one. */
  algorithms: string[];
  keyTypes: string[];
}

/** The keys pinned for this host and port (none revoked), and the algorithms that select them. */
export function pinnedHostKeys(entries: KnownHostEntry[], host: string, port: number): PinnedHostKeys {
  const wanted = knownHostsName(host, port);
  const matching = entries.filter((entry) => entry.names.some((name) => nameMatches(name, wanted)));
  const revoked = matching.filter((entry) => entry.revoked).map((entry) => entry.key);
  const pinned = matching.filter((entry) => !entry.revoked && !revoked.some((key) => key.equals(entry.key)));
  const keyTypes = [...new Set(pinned.map((entry) => entry.keyType))];
  return {
    keys: pinned.map((entry) => entry.key),
    keyTypes,
    algorithms: keyTypes.flatMap((type) => HOST_KEY_ALGORITHMS[type]!),
  };
}

import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { knownHostsName, parseKnownHosts, pinnedHostKeys } from '../../ssh/known-hosts';

/** A syntactically valid key blob of a type: the type string, then some bytes. */
function blob(type: string, filler: number): string {
  const name = Buffer.from(type);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(name.length);
  return Buffer.concat([length, name, Buffer.alloc(32, filler)]).toString('base64');
}
const ED_A = blob('ssh-ed25519', 1);
const ED_B = blob('ssh-ed25519', 2);
const RSA = blob('ssh-rsa', 3);
const ECDSA = blob('ecdsa-sha2-nistp256', 4);

function hashed(name: string): string {
  const salt = Buffer.alloc(20, 9);
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
}

describe('known_hosts pinning', () => {
  it('names a host bare on port 22 and bracketed on any other', () => {
    expect(knownHostsName('example.org', 22)).toBe('example.org');
    expect(knownHostsName('10.0.0.5', 2222)).toBe('[10.0.0.5]:2222');
  });

  it('pins the keys of every entry naming the host and port, plain, listed or hashed, and offers only their key types', () => {
    const entries = parseKnownHosts(
      [
        '# a comment',
        '',
        `example.org ssh-ed25519 ${ED_A}`,
        `other.org,EXAMPLE.org ssh-rsa ${RSA} a comment`,
        `${hashed('example.org')} ecdsa-sha2-nistp256 ${ECDSA}`,
        `[example.org]:2222 ssh-ed25519 ${ED_B}`,
      ].join('\r\n'),
    );
    const on22 = pinnedHostKeys(entries, 'example.org', 22);
    expect(on22.keys.map((k) => k.toString('base64'))).toEqual([ED_A, RSA, ECDSA]);
    expect(on22.keyTypes).toEqual(['ssh-ed25519', 'ssh-rsa', 'ecdsa-sha2-nistp256']);
    expect(on22.algorithms).toEqual(['ssh-ed25519', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa', 'ecdsa-sha2-nistp256']);

    const on2222 = pinnedHostKeys(entries, 'example.org', 2222);
    expect(on2222.keys.map((k) => k.toString('base64'))).toEqual([ED_B]);
    expect(on2222.algorithms).toEqual(['ssh-ed25519']);
    expect(pinnedHostKeys(entries, 'unknown.org', 22).keys).toEqual([]);
  });

  it('skips what it cannot match exactly: wildcards, negations, CA lines, unknown types, broken or mislabelled keys', () => {
    const entries = parseKnownHosts(
      [
        `*.example.org ssh-ed25519 ${ED_A}`,
        `!bad.example.org,exa?ple.org ssh-ed25519 ${ED_A}`,
        `@cert-authority example.org ssh-ed25519 ${ED_A}`,
        `example.org ssh-dss ${blob('ssh-dss', 5)}`,
        `example.org ssh-ed25519 not*base64`,
        `example.org ssh-ed25519 ${RSA}`,
        `example.org ssh-ed25519`,
        `|1|broken example.org-less ssh-ed25519 ${ED_A}`,
      ].join('\n'),
    );
    expect(pinnedHostKeys(entries, 'example.org', 22).keys).toEqual([]);
    expect(pinnedHostKeys(entries, 'a.example.org', 22).keys).toEqual([]);
  });

  it('a key marked @revoked is never pinned, even where another line names it', () => {
    const entries = parseKnownHosts(
      [
        `example.org ssh-ed25519 ${ED_A}`,
        `example.org ssh-ed25519 ${ED_B}`,
        `@revoked example.org ssh-ed25519 ${ED_A}`,
      ].join('\n'),
    );
    expect(pinnedHostKeys(entries, 'example.org', 22).keys.map((k) => k.toString('base64'))).toEqual([ED_B]);
  });
});

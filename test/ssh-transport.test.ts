/**
 * The SSH transport against a real sshd on 127.0.0.1 (test/support/ssh-server.ts): arguments and
 * payloads arrive intact without any shell string built from them, a host is trusted only by its
 * pinned key, and a target that goes down is refused promptly and used again once it is back.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeSshConnections, SshRefusal, type SshTarget } from '../ssh/connection';
import { runRemote } from '../ssh/remote-exec';
import { waitUntil } from './support/scenario';
import { startSshServer, type SshServer } from './support/ssh-server';

let server: SshServer;
let target: SshTarget;

beforeAll(async () => {
  server = await startSshServer();
  target = {
    id: 'target-a',
    host: server.host,
    port: server.port,
    user: server.user,
    privateKeyPath: server.privateKeyPath,
    knownHosts: server.knownHostsLine,
    workspaceRoot: server.workspaceRoot,
  };
});
afterAll(async () => {
  await closeSshConnections();
  await server?.remove();
});

/** The refusal a run ends with (it must end with one). */
async function refusalOf(run: Promise<unknown>): Promise<SshRefusal> {
  const outcome = await run.then(
    () => null,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(SshRefusal);
  return outcome as SshRefusal;
}

/** A refusal says what happened in a word: never the key's path, the host or the user. */
function expectSafe(refusal: SshRefusal) {
  for (const secret of [server.privateKeyPath, path.dirname(server.privateKeyPath), String(server.port), server.user]) {
    expect(refusal.message).not.toContain(secret);
    expect(refusal.reason).not.toContain(secret);
  }
  expect(refusal.reason).toMatch(/^[a-z_]+$/);
}

describe('runRemote', () => {
  beforeEach(async () => {
    await server.start(); // a test that stopped it leaves it running for the next
  });

  it('runs a script on the target and returns its stdout, stderr and exit code', async () => {
    const result = await runRemote(target, 'echo hello; echo warning >&2; exit 7', []);
    expect(result.stdout.toString()).toBe('hello\n');
    expect(result.stderr).toBe('warning\n');
    expect(result.code).toBe(7);
    expect(result.signal).toBeNull();
    expect((await runRemote(target, 'true', [])).code).toBe(0);
  });

  it('a script ended by a signal reports the signal (as Node names it), not a code', async () => {
    const result = await runRemote(target, 'kill -TERM $$', []);
    expect(result.code).toBeNull();
    expect(result.signal).toBe('SIGTERM');
  });

  it('arguments arrive byte-for-byte as "$@", whatever they hold, and none is ever run', async () => {
    const marker = path.join(server.workspaceRoot, 'injected');
    const args = [
      'plain',
      'with spaces  and\ttabs',
      '',
      `it's "quoted"`,
      `$(touch ${marker})`,
      `\`touch ${marker}\``,
      `; touch ${marker}`,
      'line one\nline two\n',
      '-n',
      '--',
      '*',
      'üñíçødé ✓',
      '\\ back\\slash',
      '',
    ];
    const result = await runRemote(target, 'printf "%s\\0" "$@"', args);
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8').split('\0').slice(0, -1)).toEqual(args);
    expect(existsSync(marker)).toBe(false);

    expect((await runRemote(target, 'echo $#', [])).stdout.toString()).toBe('0\n');
    const many = Array.from({ length: 2000 }, (_, i) => `arg ${i}`);
    expect((await runRemote(target, 'echo $#; printf "%s\\n" "${@: -1}"', many)).stdout.toString()).toBe(
      '2000\narg 1999\n',
    );
  });

  it('a stdin payload after the arguments reaches the script byte-for-byte, as a buffer or a stream', async () => {
    const payload = randomBytes(1024 * 1024);
    const digest = createHash('sha256').update(payload).digest('hex');
    const hashed = await runRemote(target, 'printf "%s|" "$1"; sha256sum', ['first arg'], { stdin: payload });
    expect(hashed.stdout.toString()).toBe(`first arg|${digest}  -\n`);

    const file = path.join(server.workspaceRoot, 'payload.bin');
    const written = await runRemote(target, 'cat > "$1"', [file], {
      stdin: Readable.from([payload.subarray(0, 1000), payload.subarray(1000)]),
    });
    expect(written.code).toBe(0);
    expect((await readFile(file)).equals(payload)).toBe(true);

    // stdout comes back as bytes, not text.
    const echoed = await runRemote(target, 'cat', [], { stdin: payload });
    expect(echoed.stdout.equals(payload)).toBe(true);
  });

  it('a host presenting a key other than the pinned one is refused ssh_host_key_mismatch, and the script never runs', async () => {
    const marker = path.join(server.workspaceRoot, 'ran-on-unpinned-host');
    const impostor = { ...target, id: 'target-mismatch', knownHosts: await server.otherHostKnownHostsLine() };
    const refusal = await refusalOf(runRemote(impostor, 'touch "$1"', [marker]));
    expect(refusal.code).toBe('ssh_host_key_mismatch');
    expectSafe(refusal);
    expect(existsSync(marker)).toBe(false);
  });

  it('a host with no pinned entry is refused ssh_host_key_mismatch (never trusted on first use)', async () => {
    const marker = path.join(server.workspaceRoot, 'ran-on-first-use');
    const otherPort = server.knownHostsLine.replace(`]:${server.port} `, `]:${server.port + 1} `);
    for (const knownHosts of ['', '# nothing pinned\n', otherPort]) {
      const refusal = await refusalOf(
        runRemote({ ...target, id: 'target-unpinned', knownHosts }, 'touch "$1"', [marker]),
      );
      expect(refusal.code).toBe('ssh_host_key_mismatch');
    }
    expect(existsSync(marker)).toBe(false);
  });

  it('a key the server does not accept, or one that cannot be read, is ssh_target_unavailable with a reason and no path', async () => {
    const otherKey = path.join(server.workspaceRoot, 'not-authorized');
    const { execFileSync } = await import('node:child_process');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', otherKey]);
    const refused = await refusalOf(
      runRemote({ ...target, id: 'target-wrong-key', privateKeyPath: otherKey }, 'true', []),
    );
    expect([refused.code, refused.reason]).toEqual(['ssh_target_unavailable', 'auth_failed']);
    expectSafe(refused);

    const missing = await refusalOf(
      runRemote(
        { ...target, id: 'target-no-key', privateKeyPath: path.join(server.workspaceRoot, 'absent') },
        'true',
        [],
      ),
    );
    expect([missing.code, missing.reason]).toEqual(['ssh_target_unavailable', 'key_unreadable']);
    expectSafe(missing);

    const garbage = path.join(server.workspaceRoot, 'garbage-key');
    await writeFile(garbage, 'not a key\n');
    const unusable = await refusalOf(
      runRemote({ ...target, id: 'target-bad-key', privateKeyPath: garbage }, 'true', []),
    );
    expect([unusable.code, unusable.reason]).toEqual(['ssh_target_unavailable', 'key_unusable']);
  });

  it('stdout past 16 MB ends the run with an error rather than filling memory; the connection goes on', async () => {
    await expect(runRemote(target, 'head -c 17000000 /dev/zero', [])).rejects.toThrow(/more than 16777216 bytes/);
    expect((await runRemote(target, 'echo fine', [])).stdout.toString()).toBe('fine\n');
  });

  it('a stopped target is refused ssh_target_unavailable within seconds; once it is back the next run reconnects', async () => {
    expect((await runRemote(target, 'echo up', [])).stdout.toString()).toBe('up\n'); // a pooled connection exists
    await server.stop();
    const startedAt = Date.now();
    const refusal = await refusalOf(runRemote(target, 'echo up', []));
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect(refusal.code).toBe('ssh_target_unavailable');
    expect(['connect_refused', 'connection_lost']).toContain(refusal.reason);
    expectSafe(refusal);
    // Still down: refused again, not a stale connection's hang (a loaded machine may hand the
    // second run the old connection before its close is seen: lost, not refused, and as quick).
    const again = await refusalOf(runRemote(target, 'echo up', []));
    expect(again.code).toBe('ssh_target_unavailable');
    expect(['connect_refused', 'connection_lost']).toContain(again.reason);

    await server.start();
    expect((await runRemote(target, 'echo back', [])).stdout.toString()).toBe('back\n');
  });

  it('a target that goes down mid-command ends the run ssh_target_unavailable connection_lost, not a hang', async () => {
    // The command writes a file once it runs on the target (the same machine): the server stops then.
    const started = path.join(os.tmpdir(), `tws-ssh-started-${randomBytes(6).toString('hex')}`);
    let settled = false;
    const running = refusalOf(runRemote(target, `touch "${started}"; sleep 30`, [])).finally(() => (settled = true));
    await waitUntil(async () => settled || existsSync(started), 'the command running on the target');
    expect(settled, 'the run ended before the target went down').toBe(false);
    await rm(started, { force: true });
    await server.stop();
    const startedAt = Date.now();
    const refusal = await running;
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect([refusal.code, refusal.reason]).toEqual(['ssh_target_unavailable', 'connection_lost']);
  });

  it('a run past its timeout is ended and refused command_timeout', async () => {
    const startedAt = Date.now();
    const refusal = await refusalOf(runRemote(target, 'sleep 30', [], { timeoutMs: 500 }));
    expect(refusal.reason).toBe('command_timeout');
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect((await runRemote(target, 'echo still usable', [])).stdout.toString()).toBe('still usable\n');
  });

  it('20 runs at once on one target all succeed (its channels queued on the pooled connection)', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => runRemote(target, 'sleep 0.2; printf "%s" "$1"', [`run ${i}`])),
    );
    expect(results.map((r) => r.stdout.toString())).toEqual(Array.from({ length: 20 }, (_, i) => `run ${i}`));
    expect(results.every((r) => r.code === 0)).toBe(true);
  });

  it('a script with a single quote or an argument with NUL is a programming error, refused before connecting', async () => {
    await expect(runRemote(target, "echo 'quoted'", [])).rejects.toThrow(/single quote/);
    await expect(runRemote(target, 'true', ['a\0b'])).rejects.toThrow(/NUL/);
  });
});

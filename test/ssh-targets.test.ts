/**
 * SSH targets as records (POST/GET /v1/ssh-targets, operator), through the real gateway against a
 * real sshd: a target is stored only after one check over SSH (pinned host key, accepted key,
 * usable workspace root); a refusal stores nothing and says what failed without a path, a host
 * or a key; no answer ever shows the key's path or the pinned keys.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeSshConnections } from '../ssh/connection';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { expectSafeError, waitUntil } from './support/scenario';
import { startSshServer, type SshServer } from './support/ssh-server';

let h: Harness;
let server: SshServer;
let n = 0;

beforeAll(async () => {
  [h, server] = await Promise.all([createHarness(), startSshServer()]);
});
afterAll(async () => {
  await closeSshConnections();
  await server?.remove();
  await h?.close();
});
beforeEach(async () => {
  await server.start();
});

/** A body that registers the test's sshd under a fresh name. */
function targetBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: `target-${++n}`,
    host: server.host,
    port: server.port,
    user: server.user,
    privateKeyPath: server.privateKeyPath,
    knownHosts: server.knownHostsLine,
    workspaceRoot: server.workspaceRoot,
    ...extra,
  };
}

const post = (body: unknown) => h.api('POST', '/v1/ssh-targets', body, OPERATOR_TOKEN);
const rowCount = async () => Number((await h.pool.query('SELECT count(*) AS n FROM ssh_targets')).rows[0].n);
const hostKeyBase64 = () => server.knownHostsLine.split(' ')[2]!;

/** Nothing in an answer locates the key or shows the pinned key. */
function expectNoKeyMaterial(body: unknown) {
  const text = JSON.stringify(body);
  expect(text).not.toContain(server.privateKeyPath);
  expect(text).not.toContain(path.dirname(server.privateKeyPath));
  expect(text).not.toContain(hostKeyBase64());
  expect(text).not.toMatch(/privateKey|knownHosts|PRIVATE KEY/);
}

/** A refusal: the contract's body, nothing stored, no path, host or key in it. */
async function expectRefused(body: Record<string, unknown>, status: number, code: string, reason?: string) {
  const before = await rowCount();
  const res = await post(body);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  // (Not the port: its digits could turn up in the errorId by chance.)
  expectSafeError(res.body, code, [server.privateKeyPath, hostKeyBase64(), server.host, server.workspaceRoot]);
  if (reason !== undefined) expect(res.body.error.reason).toBe(reason);
  expect(await rowCount()).toBe(before);
  return res.body.error;
}

describe('POST /v1/ssh-targets', () => {
  it('registers a reachable target with its pinned key: the row holds the key path, no answer shows it', async () => {
    const body = targetBody({ workspaceRoot: `${server.workspaceRoot}/` });
    const res = await post(body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: body.name,
      host: '127.0.0.1',
      port: server.port,
      user: server.user,
      workspaceRoot: server.workspaceRoot,
      hostKeyTypes: ['ssh-ed25519'],
      hostId: h.config.hostId,
      createdAt: expect.any(String),
    });
    expectNoKeyMaterial(res.body);
    const row = (await h.pool.query('SELECT * FROM ssh_targets WHERE id = $1', [res.body.id])).rows[0];
    expect(row).toMatchObject({
      name: body.name,
      host: '127.0.0.1',
      port: server.port,
      username: server.user,
      private_key_path: server.privateKeyPath,
      known_hosts: server.knownHostsLine,
      workspace_root: server.workspaceRoot,
      host_id: h.config.hostId,
    });
    // The check's probe folder is gone again.
    expect(execFileSync('ls', ['-A', server.workspaceRoot], { encoding: 'utf8' })).not.toContain('.tws-probe');

    // Only an operator registers or lists.
    expect((await h.api('POST', '/v1/ssh-targets', targetBody())).status).toBe(403);
    expect((await h.api('GET', '/v1/ssh-targets')).status).toBe(403);
  });

  it('a name already registered is 409 ssh_target_name_taken, the first target unchanged', async () => {
    const first = await post(targetBody());
    expect(first.status).toBe(201);
    const error = await expectRefused(
      targetBody({ name: first.body.name, workspaceRoot: '/' }),
      409,
      'ssh_target_name_taken',
    );
    expect(error.recoverable).toBe(false);
    expect(
      (await h.pool.query('SELECT workspace_root FROM ssh_targets WHERE name = $1', [first.body.name])).rows,
    ).toEqual([{ workspace_root: server.workspaceRoot }]);
  });

  it('a host key other than the pinned one is 409 ssh_host_key_mismatch (operator), and nothing is stored', async () => {
    const error = await expectRefused(
      targetBody({ knownHosts: await server.otherHostKnownHostsLine() }),
      409,
      'ssh_host_key_mismatch',
      'host_key_mismatch',
    );
    expect([error.recoverable, error.action]).toEqual([false, 'operator']);
    // Lines for another host or port pin nothing for this one: never trusted on first use.
    await expectRefused(
      targetBody({ knownHosts: `[127.0.0.1]:${server.port + 1} ssh-ed25519 ${hostKeyBase64()}` }),
      409,
      'ssh_host_key_mismatch',
      'no_pinned_host_key',
    );
  });

  it('a target that is down is 503 ssh_target_unavailable (retry), and nothing is stored', async () => {
    await server.stop();
    const error = await expectRefused(targetBody(), 503, 'ssh_target_unavailable', 'connect_refused');
    expect([error.recoverable, error.action]).toEqual([true, 'retry']);
    await server.start();
    expect((await post(targetBody())).status).toBe(201);
  });

  it('a key the target refuses, or one this host cannot read, is 503 ssh_target_unavailable with its reason, and nothing is stored', async () => {
    const otherKey = path.join(h.scratch, 'not-authorized');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', otherKey]);
    await expectRefused(targetBody({ privateKeyPath: otherKey }), 503, 'ssh_target_unavailable', 'auth_failed');
    await expectRefused(
      targetBody({ privateKeyPath: path.join(h.scratch, 'no-such-key') }),
      503,
      'ssh_target_unavailable',
      'key_unreadable',
    );
  });

  it('a workspace root that is missing, a file, or reached through a symlink is 503 workspace_root_unusable (for an operator), and nothing is stored', async () => {
    const file = path.join(server.workspaceRoot, 'a-file');
    writeFileSync(file, 'x');
    const real = path.join(server.workspaceRoot, 'real');
    mkdirSync(real);
    const link = path.join(server.workspaceRoot, 'link');
    symlinkSync(real, link);
    for (const workspaceRoot of [path.join(server.workspaceRoot, 'missing'), file, link, path.join(link, '.')]) {
      const error = await expectRefused(targetBody({ workspaceRoot }), 503, 'workspace_root_unusable');
      expect(error).toMatchObject({ recoverable: false, action: 'operator' });
    }
    expect((await post(targetBody({ workspaceRoot: real }))).status).toBe(201);
  });

  it('malformed input is 400 before any connection, and nothing is stored', async () => {
    const bad: Record<string, unknown>[] = [
      { name: 'Upper' },
      { name: '-dash' },
      { name: 'x'.repeat(64) },
      { host: 'host name' },
      { host: 'user@host' },
      { host: '-oProxyCommand=x' },
      { host: 'not:an:ip:zz' },
      { port: 0 },
      { port: 70000 },
      { port: '22' },
      { user: 'Root' },
      { user: 'a b' },
      { user: '-l' },
      { privateKeyPath: 'relative/key' },
      { workspaceRoot: 'relative' },
      { workspaceRoot: '/srv/../etc' },
      { workspaceRoot: '/srv/ws\nx' },
      { knownHosts: '' },
      { knownHosts: '# only a comment\n' },
      { knownHosts: '127.0.0.1 ssh-ed25519 not-base64!' },
      { extra: true },
    ];
    for (const change of bad) await expectRefused(targetBody(change), 400, 'invalid_request');
    for (const missing of ['name', 'host', 'user', 'privateKeyPath', 'knownHosts', 'workspaceRoot']) {
      const body = targetBody();
      delete body[missing];
      await expectRefused(body, 400, 'invalid_request');
    }
  });
});

describe('GET /v1/ssh-targets', () => {
  it('lists targets newest first a page at a time, as POST shows them: never the key path or the keys', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await post(targetBody());
      expect(res.status).toBe(201);
      made.push(res.body.id);
    }
    const items: any[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: any } = await h.api(
        'GET',
        `/v1/ssh-targets?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        undefined,
        OPERATOR_TOKEN,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['items', 'nextCursor']);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      expectNoKeyMaterial(res.body);
      items.push(...res.body.items);
      cursor = res.body.nextCursor;
    } while (cursor !== null);
    const inDb = (await h.pool.query('SELECT id FROM ssh_targets ORDER BY created_at DESC, id DESC')).rows.map(
      (r) => r.id,
    );
    expect(items.map((x) => x.id)).toEqual(inDb);
    expect(inDb.slice(0, 3)).toEqual([...made].reverse());
    for (const item of items)
      expect(Object.keys(item).sort()).toEqual([
        'createdAt',
        'host',
        'hostId',
        'hostKeyTypes',
        'id',
        'name',
        'port',
        'user',
        'workspaceRoot',
      ]);
    expect((await h.api('GET', '/v1/ssh-targets?cursor=bm90LWEtY3Vyc29y', undefined, OPERATOR_TOKEN)).status).toBe(400);
  });

  it('both routes are in the OpenAPI document', async () => {
    const doc = await h.api('GET', '/openapi.json');
    expect(Object.keys(doc.body.paths['/v1/ssh-targets']).sort()).toEqual(['get', 'post']);
  });
});

describe('the host that holds the key', () => {
  it("checks the target on that host, through its queue, when it is not the gateway's own; an unknown host is a 400 and a down one a 503, storing nothing", async () => {
    const other = h.spawnWorker({
      TWS_HOST_ID: 'ssh-key-host',
      TWS_WORKSPACE_ROOT: path.join(h.scratch, 'ssh-key-host-root'),
      TWS_HOST_HEARTBEAT_MS: '300',
    });
    try {
      await waitUntil(
        async () => (await h.pool.query("SELECT 1 FROM hosts WHERE host_id = 'ssh-key-host'")).rowCount === 1,
        'the other host registered',
      );
      const res = await post(targetBody({ hostId: 'ssh-key-host' }));
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.hostId).toBe('ssh-key-host');
      expect((await h.pool.query('SELECT host_id FROM ssh_targets WHERE id = $1', [res.body.id])).rows[0].host_id).toBe(
        'ssh-key-host',
      );
      // The check ran on that host's worker: its question workflow completed.
      const checks: string[] = [];
      for await (const wf of h.temporal.workflow.list({
        query: `WorkflowType = 'checkSshTargetOnHost' AND TaskQueue = '${h.config.taskQueue}'`,
      }))
        checks.push(wf.status.name);
      expect(checks).toEqual(['COMPLETED']);
      // Its own refusal comes back typed: a host key that is not the pinned one.
      await expectRefused(
        targetBody({ hostId: 'ssh-key-host', knownHosts: await server.otherHostKnownHostsLine() }),
        409,
        'ssh_host_key_mismatch',
      );
    } finally {
      other.kill('SIGKILL');
    }
    await expectRefused(targetBody({ hostId: 'no-such-host' }), 400, 'invalid_request');
    await h.pool.query(`UPDATE hosts SET last_seen_at = now() - interval '1 hour' WHERE host_id = 'ssh-key-host'`);
    await expectRefused(targetBody({ hostId: 'ssh-key-host' }), 503, 'host_unavailable');
  });
});

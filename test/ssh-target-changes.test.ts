/**
 * An SSH target after registration (PATCH and DELETE /v1/ssh-targets/:id, operator), through the
 * real gateway against a real sshd whose host key really changes: a change is checked over SSH as a
 * registration is and written only then; a target environments still use is never removed, nor
 * its workspace root moved from under them.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSshConnections } from '../ssh/connection';
import { deleteTask, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, registerRepo } from './support/scenario';
import { startSshServer, targetFields, type SshServer } from './support/ssh-server';
import { makeRepo, rowCounts } from './support/world';

let h: Harness;
let server: SshServer;
let n = 0;

beforeAll(async () => {
  [h, server] = await Promise.all([createHarness(), startSshServer()]);
});
afterAll(async () => {
  await h?.close();
  await closeSshConnections();
  await server?.remove();
});

const op = (method: string, route: string, body?: unknown) => h.api(method, route, body, OPERATOR_TOKEN);
const rowOf = async (id: string) => (await h.pool.query('SELECT * FROM ssh_targets WHERE id = $1', [id])).rows[0];

async function register(): Promise<string> {
  const res = await op('POST', '/v1/ssh-targets', { name: `changing-${++n}`, ...targetFields(server) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function sshTask(targetId: string) {
  const name = `changing-repo-${++n}`;
  const taskId = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, name), name)]);
  return { taskId, launch: () => launch(h, taskId, { executorType: 'ssh', sshTargetId: targetId }) };
}

/** Nothing of the key, its path, the pinned lines or the host in an answer. */
const expectSafe = (body: any, code: string) =>
  expectSafeError(body, code, [server.privateKeyPath, server.knownHostsLine.split(' ')[2]!, server.workspaceRoot]);

describe('PATCH /v1/ssh-targets/:id', () => {
  it('a target whose host key changed is fixed by giving the new line: its launches refused before, started after', async () => {
    const targetId = await register();
    const first = await sshTask(targetId);
    expect((await first.launch()).status).toBe(201);

    await server.changeHostKey();
    const second = await sshTask(targetId);
    const refused = await second.launch();
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expectSafe(refused.body, 'ssh_host_key_mismatch');

    const before = await rowOf(targetId);
    // A line that pins another key is checked as at registration: refused, nothing written.
    const wrong = await op('PATCH', `/v1/ssh-targets/${targetId}`, {
      knownHosts: await server.otherHostKnownHostsLine(),
    });
    expect(wrong.status).toBe(409);
    expectSafe(wrong.body, 'ssh_host_key_mismatch');
    // Only an operator changes a target.
    const byUser = await h.api(
      'PATCH',
      `/v1/ssh-targets/${targetId}`,
      { knownHosts: server.knownHostsLine },
      USER_TOKEN,
    );
    expect(byUser.status).toBe(403);
    expect(await rowOf(targetId)).toEqual(before);

    const fixed = await op('PATCH', `/v1/ssh-targets/${targetId}`, { knownHosts: server.knownHostsLine });
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(200);
    expect(fixed.body).toMatchObject({ id: targetId, name: before.name, hostKeyTypes: ['ssh-ed25519'] });
    expect(JSON.stringify(fixed.body)).not.toContain(server.knownHostsLine.split(' ')[2]!);
    expect(JSON.stringify(fixed.body)).not.toContain(server.privateKeyPath);
    expect(await rowOf(targetId)).toEqual({ ...before, known_hosts: server.knownHostsLine });

    const started = await second.launch();
    expect(started.status, JSON.stringify(started.body)).toBe(201);
  });

  it('bad input is a 400 and an unknown target a 404, before any connection; nothing changes', async () => {
    const targetId = await register();
    const before = await rowOf(targetId);
    for (const body of [
      {},
      { knownHosts: 'not a known_hosts line' },
      { workspaceRoot: '/tmp/../etc' },
      { workspaceRoot: 'relative' },
      { host: 'a:b' },
      { port: 0 },
      { name: 'renamed' },
    ]) {
      const res = await op('PATCH', `/v1/ssh-targets/${targetId}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expectSafe(res.body, 'invalid_request');
    }
    const missing = await op('PATCH', '/v1/ssh-targets/00000000-0000-4000-8000-000000000000', { port: 22 });
    expect(missing.status).toBe(404);
    // A workspace root the target cannot use is refused as at registration.
    const unusable = await op('PATCH', `/v1/ssh-targets/${targetId}`, { workspaceRoot: '/nonexistent-root' });
    expect(unusable.status).toBe(503);
    expectSafe(unusable.body, 'workspace_root_unusable');
    expect(await rowOf(targetId)).toEqual(before);
  });
});

describe('DELETE /v1/ssh-targets/:id', () => {
  it('refuses 409 ssh_target_in_use while an environment uses it (its root stays too); removes it once that task is deleted', async () => {
    const targetId = await register();
    const task = await sshTask(targetId);
    expect((await task.launch()).status).toBe(201);
    const before = { row: await rowOf(targetId), counts: await rowCounts(h.pool) };

    const inUse = await op('DELETE', `/v1/ssh-targets/${targetId}`);
    expect(inUse.status, JSON.stringify(inUse.body)).toBe(409);
    expectSafe(inUse.body, 'ssh_target_in_use');
    expect(inUse.body.error.recoverable).toBe(false);
    const otherRoot = mkdtempSync(path.join(server.workspaceRoot, 'moved-'));
    const moved = await op('PATCH', `/v1/ssh-targets/${targetId}`, { workspaceRoot: otherRoot });
    expect(moved.status, JSON.stringify(moved.body)).toBe(409);
    expectSafe(moved.body, 'ssh_target_in_use');
    expect(await rowOf(targetId)).toEqual(before.row);
    expect(await rowCounts(h.pool)).toEqual(before.counts);
    expect((await h.api('DELETE', `/v1/ssh-targets/${targetId}`, undefined, USER_TOKEN)).status).toBe(403);

    const deleted = await deleteTask(h, task.taskId, 'discardChanges=true');
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    await waitForJob(h, deleted.body.operationId);
    const removed = await op('DELETE', `/v1/ssh-targets/${targetId}`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(204);
    expect(await rowOf(targetId)).toBeUndefined();
    const listed = await op('GET', '/v1/ssh-targets?limit=200');
    expect(listed.body.items.map((t: { id: string }) => t.id)).not.toContain(targetId);
    expect((await op('DELETE', `/v1/ssh-targets/${targetId}`)).status).toBe(404);
  });

  it('tws changes and removes a target: ssh-target-set reads the known_hosts lines from a file, ssh-target-rm removes it', async () => {
    const targetId = await register();
    const file = path.join(h.scratch, `known-hosts-${n}`);
    writeFileSync(file, `${server.knownHostsLine}\n`);
    const env = { ...process.env, TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN };
    const tws = (...args: string[]) =>
      promisify(execFile)(path.resolve('bin/tws.mjs'), args, { env, encoding: 'utf8' }).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
      );
    const set = await tws('ssh-target-set', targetId, '--known-hosts', file, '--port', String(server.port), '--json');
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ id: targetId, port: server.port });
    expect((await rowOf(targetId)).known_hosts).toBe(`${server.knownHostsLine}\n`);
    expect((await tws('ssh-target-rm', targetId)).code).toBe(0);
    expect(await rowOf(targetId)).toBeUndefined();
    expect((await tws('ssh-target-rm', targetId)).code).toBe(4);
  });

  it('an unused target is removed at once; both routes are in the OpenAPI document', async () => {
    const targetId = await register();
    expect((await op('DELETE', `/v1/ssh-targets/${targetId}`)).status).toBe(204);
    expect(await rowOf(targetId)).toBeUndefined();
    const doc = await h.api('GET', '/openapi.json');
    expect(Object.keys(doc.body.paths['/v1/ssh-targets/{id}']).sort()).toEqual(['delete', 'patch']);
  });
});

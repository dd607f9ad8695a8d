/**
 * A service started by another user than root: where agents cannot be sandboxed or limited, the
 * start-up's refusal names exactly what is missing and how to get it. The real checks run here as
 * an unprivileged uid (setpriv), as a worker started by a normal user runs them.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { agentSandboxRefusal } from '../executors/host/agent-sandbox';
import { limitsRefusal } from '../executors/host/agent-limits';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');
const NOBODY = 65534;

/** The service's two start-up checks, run as `uid` in this checkout: what each throws, or `ok`. */
async function checksAs(uid: number): Promise<{ sandbox: string; limits: string }> {
  const script = `
    const load = async (file) => { const m = await import(file); return { ...m.default, ...m }; };
    const { agentSandbox } = await load('./executors/host/agent-sandbox.ts');
    const { agentLimitsLayout } = await load('./executors/host/agent-limits.ts');
    const { parseLimitSettings } = await load('./domain/limits.ts');
    const said = (p) => p.then(() => 'ok', (err) => err.message);
    const sandbox = await said(agentSandbox('auto'));
    const limits = await said(agentLimitsLayout({ ...parseLimitSettings({}, 2), cgroupParent: 'tws-non-root-test' }));
    console.log(JSON.stringify({ sandbox, limits }));
  `;
  // The checkout seen at a folder of its own in a mount namespace of this run: the uid reads it
  // there whatever the folders above the checkout let others do (a clone under /root, say).
  const seen = mkdtempSync(path.join(tmpdir(), 'tws-non-root-'));
  chmodSync(seen, 0o755);
  const { stdout } = await run(
    '/usr/bin/unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '/bin/sh',
      '-c',
      'mount --bind "$0" "$1" && cd "$1" && shift && exec "$@"',
      ROOT,
      seen,
      '/usr/bin/setpriv',
      `--reuid=${uid}`,
      `--regid=${uid}`,
      '--clear-groups',
      process.execPath,
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
    ],
    { cwd: ROOT, env: { PATH: process.env.PATH, HOME: '/tmp' }, timeout: 60_000 },
  ).finally(() => rmSync(seen, { recursive: true, force: true }));
  return JSON.parse(stdout.trim().split('\n').pop()!) as { sandbox: string; limits: string };
}

describe('a service started as a normal user', () => {
  it('refuses in one line naming root, TWS_AGENT_SANDBOX=none and TWS_AGENT_LIMITS=off, never blaming bubblewrap', async () => {
    const said = await checksAs(NOBODY);
    expect(said.sandbox).toBe(agentSandboxRefusal({ bwrap: true, setpriv: true, serviceUid: NOBODY }));
    expect(said.sandbox).toContain(`runs as uid ${NOBODY}, not root`);
    expect(said.sandbox).toContain('TWS_AGENT_SANDBOX=none');
    expect(said.sandbox).not.toContain('bubblewrap');
    expect(said.limits).toBe(limitsRefusal(NOBODY));
    expect(said.limits).toContain('TWS_AGENT_LIMITS=off');
  }, 90_000);

  it('names the missing package, or the kernel setting and its sysctl, for each reason a sandbox cannot run', () => {
    const base = { bwrap: true, setpriv: true, serviceUid: 0 };
    const none = { unprivilegedClone: null, maxUserNamespaces: null, apparmorRestricts: null };
    expect(agentSandboxRefusal({ ...base, bwrap: false })).toContain('apt-get install bubblewrap');
    expect(agentSandboxRefusal({ ...base, setpriv: false })).toContain('util-linux');
    expect(agentSandboxRefusal(base)).toBeNull();
    expect(agentSandboxRefusal({ ...base, namespaces: { ...none, unprivilegedClone: 0 } })).toContain(
      'sysctl -w kernel.unprivileged_userns_clone=1',
    );
    expect(agentSandboxRefusal({ ...base, namespaces: { ...none, maxUserNamespaces: 0 } })).toContain(
      'sysctl -w user.max_user_namespaces=15000',
    );
    expect(agentSandboxRefusal({ ...base, namespaces: { ...none, apparmorRestricts: 1 } })).toContain(
      'kernel.apparmor_restrict_unprivileged_userns=0',
    );
    const other = agentSandboxRefusal({
      ...base,
      namespaces: none,
      bwrapSaid: 'bwrap: No permissions to create new namespace',
    });
    expect(other).toContain('(bubblewrap said: bwrap: No permissions to create new namespace)');
    expect(other).toContain('TWS_AGENT_SANDBOX=none');
  });
});

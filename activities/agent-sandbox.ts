/**
 * Whether this host can run agents in bubblewrap (TWS_AGENT_SANDBOX: `auto` uses it when it
 * works here, `bwrap` requires it, `none` never uses it), found once per process by running it.
 */
import { execFile } from 'node:child_process';
import type { AgentIsolation, AgentSandboxMode } from '../domain/sandbox';
import { commandStartable } from './agent-shim';

const PROBE = ['--die-with-parent', '--unshare-pid', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', 'true'];
let probed: Promise<string | null> | null = null;

/** The bubblewrap binary when it runs a sandbox here, else null. */
function probeBubblewrap(): Promise<string | null> {
  probed ??= (async () => {
    if (!(await commandStartable('bwrap', '/', process.env.PATH))) return null;
    return new Promise<string | null>((resolve) => execFile('bwrap', PROBE, { timeout: 10_000 }, (err) => resolve(err ? null : 'bwrap')));
  })();
  return probed;
}

/** The sandbox binary agents run in, or null for none; `bwrap` mode refuses to go on without it. */
export async function agentSandbox(mode: AgentSandboxMode): Promise<string | null> {
  if (mode === 'none') return null;
  const binary = await probeBubblewrap();
  if (!binary && mode === 'bwrap') throw new Error('TWS_AGENT_SANDBOX=bwrap, but bubblewrap does not run a sandbox on this host (install the Debian package bubblewrap; user namespaces or root are needed)');
  return binary;
}

export async function agentIsolation(mode: AgentSandboxMode): Promise<AgentIsolation> {
  return (await agentSandbox(mode)) ? 'bwrap' : 'none';
}

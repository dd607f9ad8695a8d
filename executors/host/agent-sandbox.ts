/**
 * Whether this host can run agents in bubblewrap (TWS_AGENT_SANDBOX: `auto` uses it when it
 * works here, `bwrap` requires it, `none` never uses it), found once per process by running it.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import {
  bubblewrapArgs,
  type AgentIsolation,
  type AgentNetworkPolicy,
  type AgentSandboxMode,
} from '../../domain/sandbox';

/** Programs the service runs outside any sandbox: by absolute path, found once, never on a PATH a request could name. */
export function systemBinary(name: string): string | null {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/** The fixed environment of every process the service runs around an agent (the supervisor, setpriv, bubblewrap, slirp4netns). */
export const SERVICE_PROGRAM_ENV: Readonly<Record<string, string>> = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };

/** The supervisor's variable naming the file of the sandbox's arguments (native/agent-supervisor.c). */
export const SANDBOX_ARGS_VARIABLE = 'TWS_SANDBOX_ARGS';

/**
 * The supervisor's variable that makes it confine what it runs with a seccomp filter (no new
 * namespace, mount, ptrace: native/agent-supervisor.c): for an agent entered into a container,
 * which gets none of the container's own profile.
 */
export const CONFINE_VARIABLE = 'TWS_CONFINE';

/** How an agent's sandbox is started here: setpriv to its uid, then bubblewrap, both by absolute path. */
export interface SandboxPrograms {
  setpriv: string;
  bwrap: string;
}

/** The programs before the sandbox's arguments: the agent's uid and gid, no groups, no new privileges. */
export const dropTo = (programs: SandboxPrograms, uid: number): string[] => [
  programs.setpriv,
  `--reuid=${uid}`,
  `--regid=${uid}`,
  '--clear-groups',
  '--no-new-privs',
  programs.bwrap,
];

let probed: Promise<SandboxPrograms | string> | null = null;

/** The first line a failed program wrote on stderr, for a refusal: bubblewrap's own reason. */
function firstLine(stderr: string | Buffer | undefined): string {
  return (
    String(stderr ?? '')
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? ''
  );
}

/**
 * The programs when an unprivileged bubblewrap runs here as the agents will run it (its own user
 * namespace, no capability, no further user namespace), else the refusal naming exactly what is
 * missing and how to get it (agentSandboxRefusal). Probed once per process as the first uid of the
 * range would run it.
 */
function probeBubblewrap(probeUid: number): Promise<SandboxPrograms | string> {
  probed ??= (async () => {
    const setpriv = systemBinary('setpriv');
    const bwrap = systemBinary('bwrap');
    const serviceUid = process.getuid?.() ?? 0;
    const missing = agentSandboxRefusal({ bwrap: bwrap !== null, setpriv: setpriv !== null, serviceUid });
    if (missing || !setpriv || !bwrap) return missing ?? NO_SANDBOX;
    const programs = { setpriv, bwrap };
    const probe = [
      ...dropTo(programs, probeUid).slice(1),
      ...bubblewrapArgs({ workspace: '/', gitBinds: [], hidden: [], home: '/', readOnlyFiles: [], network: 'none' }),
      '--',
      '/bin/true',
    ];
    return new Promise<SandboxPrograms | string>((resolve) =>
      execFile(setpriv, probe, { timeout: 10_000, env: SERVICE_PROGRAM_ENV }, (err, _out, stderr) =>
        resolve(
          err
            ? (agentSandboxRefusal({
                bwrap: true,
                setpriv: true,
                serviceUid,
                namespaces: userNamespaceSettings(),
                bwrapSaid: firstLine(stderr),
              }) ?? NO_SANDBOX)
            : programs,
        ),
      ),
    );
  })();
  return probed;
}

/** The line start-up refuses with where agents cannot be sandboxed here and nothing more precise is known. */
const NO_SANDBOX =
  'agents cannot be sandboxed on this host: an unprivileged bubblewrap (Debian package bubblewrap, with setpriv from util-linux) must run in its own user namespace; install it, allow unprivileged user namespaces, or set TWS_AGENT_SANDBOX=none to run agents unsandboxed as the service';

/** The kernel settings that allow or forbid a user namespace to an unprivileged process; null where the file is absent. */
export interface UserNamespaceSettings {
  /** kernel.unprivileged_userns_clone (Debian's and Ubuntu's older kernels): 0 forbids. */
  unprivilegedClone: number | null;
  /** user.max_user_namespaces: 0 forbids. */
  maxUserNamespaces: number | null;
  /** kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10 and later): 1 forbids unless AppArmor allows the program. */
  apparmorRestricts: number | null;
}

function readSetting(file: string): number | null {
  try {
    const value = Number(readFileSync(file, 'utf8').trim());
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

function userNamespaceSettings(): UserNamespaceSettings {
  return {
    unprivilegedClone: readSetting('/proc/sys/kernel/unprivileged_userns_clone'),
    maxUserNamespaces: readSetting('/proc/sys/user/max_user_namespaces'),
    apparmorRestricts: readSetting('/proc/sys/kernel/apparmor_restrict_unprivileged_userns'),
  };
}

const SANDBOX_NONE = 'or set TWS_AGENT_SANDBOX=none to run agents unsandboxed as the service';

/**
 * Why agents cannot be sandboxed here, in one line naming what is missing and how to get it; null
 * while nothing is known to be missing. `namespaces` and `bwrapSaid` are given once bubblewrap was
 * tried and failed.
 */
export function agentSandboxRefusal(facts: {
  bwrap: boolean;
  setpriv: boolean;
  serviceUid: number;
  namespaces?: UserNamespaceSettings;
  bwrapSaid?: string;
}): string | null {
  const start = 'agents cannot be sandboxed on this host: ';
  if (!facts.bwrap)
    return `${start}bubblewrap is not installed (/usr/bin/bwrap; the package bubblewrap: apt-get install bubblewrap, dnf install bubblewrap); install it, ${SANDBOX_NONE}`;
  if (!facts.setpriv)
    return `${start}setpriv is not installed (/usr/bin/setpriv; the package util-linux, util-linux-extra on newer Debian and Ubuntu); install it, ${SANDBOX_NONE}`;
  if (facts.serviceUid !== 0)
    return `${start}each workspace's agents run as a uid of their own (TWS_AGENT_UIDS), and this service runs as uid ${facts.serviceUid}, not root, so it cannot switch to them (setpriv --reuid needs root); start it as root, ${SANDBOX_NONE} (then agents can read and write what this user can)`;
  if (!facts.namespaces) return null;
  const { unprivilegedClone, maxUserNamespaces, apparmorRestricts } = facts.namespaces;
  const said = facts.bwrapSaid ? ` (bubblewrap said: ${facts.bwrapSaid})` : '';
  if (unprivilegedClone === 0)
    return `${start}unprivileged user namespaces are off${said}: allow them with \`sysctl -w kernel.unprivileged_userns_clone=1\` (kept in /etc/sysctl.d/), ${SANDBOX_NONE}`;
  if (maxUserNamespaces === 0)
    return `${start}user namespaces are off${said}: allow them with \`sysctl -w user.max_user_namespaces=15000\` (kept in /etc/sysctl.d/), ${SANDBOX_NONE}`;
  if (apparmorRestricts === 1)
    return `${start}AppArmor restricts unprivileged user namespaces${said}: give bwrap an AppArmor profile allowing \`userns\` (Ubuntu's bubblewrap package has one in newer releases), or \`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\`, ${SANDBOX_NONE}`;
  return `${start}bubblewrap cannot make its namespaces here${said}: in a container, allow unprivileged user namespaces (seccomp and AppArmor profiles, e.g. \`--security-opt seccomp=unconfined --security-opt apparmor=unconfined\`), ${SANDBOX_NONE}`;
}

/**
 * The programs agents run in, or null for none. `none` is the operator's explicit choice; `auto`
 * and `bwrap` refuse to go on without a working sandbox (never an agent as root by default).
 */
export async function agentSandbox(mode: AgentSandboxMode, probeUid = 200000): Promise<SandboxPrograms | null> {
  if (mode === 'none') return null;
  const programs = await probeBubblewrap(probeUid);
  if (typeof programs === 'string') throw new Error(programs);
  return programs;
}

export async function agentIsolation(mode: AgentSandboxMode): Promise<AgentIsolation> {
  return (await agentSandbox(mode)) ? 'bwrap' : 'none';
}

/** slirp4netns (Debian's package), the user-mode network of `egress`, found once per process by running it. */
let slirpProbed: Promise<string | null> | null = null;
function probeSlirp(): Promise<string | null> {
  slirpProbed ??= new Promise((resolve) =>
    (() => {
      const binary = systemBinary('slirp4netns');
      if (!binary) return resolve(null);
      execFile(binary, ['--version'], { timeout: 10_000, env: SERVICE_PROGRAM_ENV }, (err) =>
        resolve(err ? null : binary),
      );
    })(),
  );
  return slirpProbed;
}

/**
 * The network agents really get here, and for `egress` the user-mode network's binary.
 * No sandbox means the host's network. `egress` without slirp4netns: with TWS_AGENT_SANDBOX=bwrap
 * the service refuses to start; with `auto` agents share the host's network, and /readyz and the
 * start-up warning say `agentNetwork: "host"`.
 */
export async function agentNetwork(
  mode: AgentSandboxMode,
  policy: AgentNetworkPolicy,
): Promise<{ policy: AgentNetworkPolicy; egressBinary: string | null }> {
  if (!(await agentSandbox(mode))) return { policy: 'host', egressBinary: null };
  if (policy !== 'egress') return { policy, egressBinary: null };
  const binary = await probeSlirp();
  if (binary) return { policy, egressBinary: binary };
  if (mode === 'bwrap')
    throw new Error(
      "TWS_AGENT_SANDBOX=bwrap with TWS_AGENT_NETWORK=egress, but slirp4netns does not run on this host (install the Debian package slirp4netns), so agents would reach the service's ports: set TWS_AGENT_NETWORK=none or host to choose otherwise",
    );
  return { policy: 'host', egressBinary: null };
}

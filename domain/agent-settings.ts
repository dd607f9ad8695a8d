/**
 * What the service's environment says about the boundary around its agents: the sandbox, the
 * host uids they run as, their network, and who may run one in the source checkout itself.
 * Read by domain/config.ts's loadConfig; each setting's parser refuses a bad value in one line.
 */
import type { AgentNetworkPolicy, AgentSandboxMode } from './sandbox';

export function parseSandboxMode(raw: string | undefined): AgentSandboxMode {
  const mode = raw || 'auto';
  if (mode !== 'auto' && mode !== 'bwrap' && mode !== 'none')
    throw new Error('TWS_AGENT_SANDBOX must be auto, bwrap or none');
  return mode;
}

/** The host uids agents run as, one per workspace (TWS_AGENT_UIDS, `first-last`). */
export interface UidRange {
  first: number;
  last: number;
}

export function parseUidRange(raw: string | undefined): UidRange {
  const text = raw || '200000-299999';
  const m = /^([0-9]+)-([0-9]+)$/.exec(text);
  const first = m ? Number(m[1]) : NaN;
  const last = m ? Number(m[2]) : NaN;
  // Never root, never a system account, never past what a 32-bit uid holds (65534 is nobody).
  if (!m || first < 1000 || last < first || last > 4_294_967_294 || (first <= 65534 && last >= 65534))
    throw new Error('TWS_AGENT_UIDS must be first-last, 1000 or above, without 65534 (for example 200000-299999)');
  return { first, last };
}

export function parseNetworkPolicy(raw: string | undefined): AgentNetworkPolicy {
  const policy = raw || 'egress';
  if (policy !== 'egress' && policy !== 'none' && policy !== 'host')
    throw new Error('TWS_AGENT_NETWORK must be egress, none or host');
  return policy;
}

/**
 * Who may launch or resume a `local` agent (TWS_LOCAL_EXECUTOR): it works in the source
 * checkout itself, with that checkout's git folder writable (its objects, its refs, the branch the
 * user has checked out), so it can damage the user's own repository. `operator` (the default):
 * operator tokens only; `all`: user tokens too; `off`: nobody.
 */
export type LocalExecutorPolicy = 'operator' | 'all' | 'off';

export function parseLocalExecutor(raw: string | undefined): LocalExecutorPolicy {
  const policy = raw || 'operator';
  if (policy !== 'operator' && policy !== 'all' && policy !== 'off')
    throw new Error('TWS_LOCAL_EXECUTOR must be operator, all or off');
  return policy;
}

/** Whether a caller of this role may run a `local` agent under the policy. */
export const localExecutorAllowed = (policy: LocalExecutorPolicy, role: 'user' | 'operator' | null): boolean =>
  policy === 'all' || (policy === 'operator' && role === 'operator');

/**
 * The container executor's settings. Off unless TWS_CONTAINER_ENGINE names an
 * engine: the Docker Engine API's socket (`unix:///run/podman/podman.sock`, `/var/run/docker.sock`,
 * or `$DOCKER_HOST`'s value), or `podman` for one `make start` runs itself (`podman system service`
 * on `<data folder>/podman.sock`). Agents run in TWS_CONTAINER_IMAGE unless their profile names
 * another; a launch may ask for one of TWS_CONTAINER_IMAGES.
 */
export interface ContainerSettings {
  /** The engine's API socket; null: the executor is not offered. */
  engineSocket: string | null;
  /** `make start` runs the engine (`podman system service`) on engineSocket. */
  managedPodman: boolean;
  /** The default image (built by `make image`). */
  image: string;
  /** Images a launch may name besides the default and its profile's. */
  allowedImages: string[];
  /** The network mode of `egress` containers (TWS_CONTAINER_EGRESS_NETWORK); null: the engine's (Podman: slirp4netns; Docker: bridge). */
  egressNetwork: string | null;
  /** Open files per process in a container (both limits; within the host's hard limit). */
  nofile: number;
}

const IMAGE_NAME = /^[a-z0-9][a-z0-9._\/:@-]{0,254}$/;

export const isImageName = (name: string): boolean => IMAGE_NAME.test(name);

export function parseContainerSettings(env: Record<string, string | undefined>, dataDir: string): ContainerSettings {
  const raw = (env.TWS_CONTAINER_ENGINE ?? '').trim();
  let engineSocket: string | null = null;
  const managedPodman = raw === 'podman';
  if (managedPodman) engineSocket = `${dataDir}/podman.sock`;
  else if (raw.startsWith('unix://')) engineSocket = raw.slice('unix://'.length);
  else if (raw.startsWith('/')) engineSocket = raw;
  else if (raw !== '' && raw !== 'off')
    throw new Error(
      'TWS_CONTAINER_ENGINE must be off, podman, or the Docker Engine API socket (unix:///path or /path)',
    );
  if (engineSocket !== null && !engineSocket.startsWith('/'))
    throw new Error('TWS_CONTAINER_ENGINE must name an absolute socket path');
  const image = env.TWS_CONTAINER_IMAGE || 'tws-agent:bookworm';
  const allowedImages = (env.TWS_CONTAINER_IMAGES ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  for (const name of [image, ...allowedImages])
    if (!isImageName(name)) throw new Error('TWS_CONTAINER_IMAGE and TWS_CONTAINER_IMAGES must be image names');
  const egressNetwork = env.TWS_CONTAINER_EGRESS_NETWORK || null;
  if (egressNetwork !== null && !/^[a-z0-9][a-z0-9_.-]*$/.test(egressNetwork))
    throw new Error('TWS_CONTAINER_EGRESS_NETWORK must be a network mode name (slirp4netns, bridge, ...)');
  const nofile = Number(env.TWS_CONTAINER_NOFILE || 8192);
  if (!Number.isInteger(nofile) || nofile < 64)
    throw new Error('TWS_CONTAINER_NOFILE must be an integer of 64 or more');
  return { engineSocket, managedPodman, image, allowedImages, egressNetwork, nofile };
}

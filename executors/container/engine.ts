/**
 * The container engine, through the Docker Engine API (dockerode), so that the same code runs
 * against Docker or Podman (`podman system service`): whether it answers, which engine it is, and
 * whether an image is on the host. Nothing is ever pulled: an image is built here (`make image`).
 */
import type Docker from 'dockerode';
import type { ContainerSettings } from '../../domain/agent-settings';
import { typedFailure } from '../support/failures';

export type EngineName = 'podman' | 'docker';

/** Why a host cannot run containers now (GET /v1/hosts, /readyz). */
type ContainersUnavailable = 'not_configured' | 'engine_unreachable' | 'image_missing' | 'not_root';

export interface ContainerAvailability {
  available: boolean;
  engine: EngineName | null;
  reason?: ContainersUnavailable;
}

/** How long one engine call may take before the engine counts as not answering. */
const ENGINE_TIMEOUT_MS = 60_000;
/** A probe (ping, version, an image's presence) is quick or the engine is down. */
const PROBE_TIMEOUT_MS = 5_000;

const clients = new Map<string, Docker>();
const engineNames = new Map<string, EngineName>();

/**
 * The engine's client (one per socket), or null where the executor is not offered. dockerode is
 * loaded here, once an engine is configured: loaded with the module it kept about 21 MB resident
 * (ssh2's WebAssembly crypto among it) in every worker and gateway, engine or none (measured:
 * `require('dockerode')` alone).
 */
export async function engineClient(settings: ContainerSettings): Promise<Docker | null> {
  if (!settings.engineSocket) return null;
  const { default: DockerClient } = await import('dockerode');
  let client = clients.get(settings.engineSocket);
  if (!client) {
    client = new DockerClient({ socketPath: settings.engineSocket, timeout: ENGINE_TIMEOUT_MS });
    clients.set(settings.engineSocket, client);
  }
  return client;
}

/** The engine's HTTP status of a failed call (404: no such image or container), or null when it did not answer. */
const engineStatusOf = (err: unknown): number | null => {
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : null;
};

export const isEngineNotFound = (err: unknown): boolean => engineStatusOf(err) === 404;

function withinProbe<T>(call: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('the container engine did not answer in time')), PROBE_TIMEOUT_MS);
  });
  return Promise.race([call, late]).finally(() => clearTimeout(timer));
}

/** Which engine answers on the socket: Podman names itself among its components. */
async function engineName(socket: string, client: Docker): Promise<EngineName> {
  const known = engineNames.get(socket);
  if (known) return known;
  const version = await withinProbe(client.version());
  const name: EngineName = (version.Components ?? []).some((c) => /podman/i.test(c.Name)) ? 'podman' : 'docker';
  engineNames.set(socket, name);
  return name;
}

/**
 * The engine, answering: a typed refusal otherwise, which leaves nothing behind. Not offered (no
 * engine configured): `executor_unavailable` with `offered: false` (400). Configured but not
 * answering, or this service not root (it enters the container to start each agent): 503.
 */
export async function requireEngine(settings: ContainerSettings): Promise<{ client: Docker; engine: EngineName }> {
  const client = await engineClient(settings);
  if (!client) throw typedFailure('executor_unavailable', { offered: false });
  if (process.getuid?.() !== 0) throw typedFailure('executor_unavailable', { reason: 'not_root' });
  try {
    await withinProbe(client.ping());
    return { client, engine: await engineName(settings.engineSocket!, client) };
  } catch {
    throw typedFailure('executor_unavailable', { reason: 'engine_unreachable' });
  }
}

/** The image is on the host (`container_image_missing` otherwise); an engine that does not answer is `executor_unavailable`. */
export async function requireImage(client: Docker, image: string): Promise<void> {
  try {
    await withinProbe(client.getImage(image).inspect());
  } catch (err) {
    if (isEngineNotFound(err)) throw typedFailure('container_image_missing');
    throw typedFailure('executor_unavailable', { reason: 'engine_unreachable' });
  }
}

/** Whether this host can run containers now, and why not: configured, root, the engine answering, the default image there. */
export async function containerAvailability(settings: ContainerSettings): Promise<ContainerAvailability> {
  const client = await engineClient(settings);
  if (!client) return { available: false, engine: null, reason: 'not_configured' };
  if (process.getuid?.() !== 0) return { available: false, engine: null, reason: 'not_root' };
  let engine: EngineName;
  try {
    await withinProbe(client.ping());
    engine = await engineName(settings.engineSocket!, client);
  } catch {
    return { available: false, engine: null, reason: 'engine_unreachable' };
  }
  try {
    await withinProbe(client.getImage(settings.image).inspect());
  } catch (err) {
    return { available: false, engine, reason: isEngineNotFound(err) ? 'image_missing' : 'engine_unreachable' };
  }
  return { available: true, engine };
}

/**
 * The container executor's tests talk to a real Podman through its Docker Engine API: one
 * `podman system service` per test process, on a socket of its own, started the first time a file
 * asks and ended with the process. The image is the project's default one, built once per machine
 * by `make test` (scripts/build-image.sh) and reused by every run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import type { ContainerSettings } from '../../domain/agent-settings';

export const TEST_IMAGE = 'tws-agent:bookworm';

let engine: { socket: string; child: ChildProcess } | null = null;

/** Why this machine cannot run the container tests, or null when it can (podman and the image are here). */
export function containersMissing(): string | null {
  if (spawnSync('podman', ['--version'], { stdio: 'ignore' }).status !== 0)
    return 'podman is not installed: `make test` installs it (scripts/build-image.sh)';
  if (spawnSync('podman', ['image', 'exists', TEST_IMAGE], { stdio: 'ignore' }).status !== 0)
    return `the image ${TEST_IMAGE} is not built: \`make image\` (scripts/build-image.sh) builds it`;
  return null;
}

/** This process's engine socket, the service started (and its socket answering) on first use. */
export async function containerEngineSocket(): Promise<string> {
  if (engine) return engine.socket;
  const missing = containersMissing();
  if (missing) throw new Error(`the container tests cannot run: ${missing}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tws-podman-'));
  const socket = path.join(dir, 'podman.sock');
  // Ended with this process however it ends (a test process is killed, not always exited):
  // the kernel sends it SIGTERM when its parent dies (setpriv's parent-death signal).
  const child = spawn(
    'setpriv',
    ['--pdeathsig', 'SIGTERM', '--', 'podman', 'system', 'service', '--time=0', `unix://${socket}`],
    { stdio: 'ignore' },
  );
  child.unref();
  process.once('exit', () => child.kill('SIGTERM'));
  const client = new Docker({ socketPath: socket });
  for (const deadline = Date.now() + 30_000; ;) {
    if (
      existsSync(socket) &&
      (await client.ping().then(
        () => true,
        () => false,
      ))
    )
      break;
    if (Date.now() > deadline) throw new Error('podman system service did not answer within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  engine = { socket, child };
  return socket;
}

/** A client of this process's engine, for a test to read what the engine holds. */
export async function engineForTests(): Promise<Docker> {
  return new Docker({ socketPath: await containerEngineSocket() });
}

/** The container executor's settings for a harness on this process's engine (the other settings at their defaults). */
export const containerSettings = (socket: string, more: Partial<ContainerSettings> = {}): ContainerSettings => ({
  engineSocket: socket,
  managedPodman: false,
  image: TEST_IMAGE,
  allowedImages: [],
  egressNetwork: null,
  nofile: 8192,
  ...more,
});

/** Ends a test host's containers (those its tasks left running), so that a run leaves none behind. */
export async function removeHostContainers(hostId: string): Promise<void> {
  const client = await engineForTests();
  const listed = await client.listContainers({ all: true, filters: { label: [`io.task-workspaces.host=${hostId}`] } });
  for (const c of listed)
    await client
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
}

/** The containers the engine holds for a test host. */
export async function hostContainers(hostId: string): Promise<Docker.ContainerInfo[]> {
  const client = await engineForTests();
  return client.listContainers({ all: true, filters: { label: [`io.task-workspaces.host=${hostId}`] } });
}

/**
 * The container of a task environment (issue: the container executor): made by the first agent
 * start that needs it, from the image the session names, as the environment's unprivileged uid
 * with no capability, `no-new-privileges`, a read-only root, the task's limits and the network
 * policy; only the workspace, the git folders its agents write (as the sandbox binds them) and
 * the container's own run folder (its agents' home and prompts) are bound in, at the same paths
 * as on the host so that git's pointers hold. Its agents are entered into it by the host's
 * supervisor (executors/container/agents.ts). One maker at a time per environment, inside an
 * agent start, which holds its task rows' share lock (its cleanup barrier's check) until it is
 * recorded: a cleanup sets its barrier only after such a start, so its removal finds the record.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import type Docker from 'dockerode';
import { dropContainerRecord, findContainer, lockEnvironmentContainer, recordContainer } from '../../db/containers';
import { inTransaction } from '../../db/pool';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentLimits } from '../../domain/limits';
import type { GitBind } from '../../domain/sandbox';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { containerCgroupProcs, processesInContainer, type RunningContainer } from './cgroups';
import { isEngineNotFound, requireEngine, requireImage, type EngineName } from './engine';

/** The labels that say a container is this service's, on which host, of which instance, for which environment. */
export const CONTAINER_LABELS = {
  owner: 'io.task-workspaces.owner',
  host: 'io.task-workspaces.host',
  instance: 'io.task-workspaces.instance',
  environment: 'io.task-workspaces.environment',
  layout: 'io.task-workspaces.layout',
} as const;
export const CONTAINER_OWNER = 'task-workspaces';

/** What a container is made with. */
export interface ContainerSpec {
  environmentId: string;
  image: string;
  uid: number;
  /** `host:container[:ro]`, in the order the sandbox binds them (the engine mounts the shallower first). */
  binds: string[];
  network: 'egress' | 'none' | 'host';
  limits: AgentLimits | null;
  tmpBytes: number | null;
}

/** The binds of a sandboxed start's layout, for the engine: each folder and file where it is on the host. */
export function containerBinds(layout: {
  workspace: string;
  pinnedFolders: string[];
  gitBinds: GitBind[];
  pointers: string[];
  runFolder: string;
}): string[] {
  const binds = [`${layout.workspace}:${layout.workspace}:rw`];
  for (const folder of layout.pinnedFolders) binds.push(`${folder}:${folder}:rw`);
  // A git folder that went away is left out, as the sandbox's `--bind-try` leaves it out.
  for (const [mode, p, source] of layout.gitBinds)
    if (existsSync(source ?? p)) binds.push(`${source ?? p}:${p}:${mode}`);
  for (const file of layout.pointers) if (existsSync(file)) binds.push(`${file}:${file}:ro`);
  binds.push(`${layout.runFolder}:${layout.runFolder}:rw`);
  return binds;
}

/** What the container is made with, as one digest: its label, and its record's. */
const layoutDigest = (spec: ContainerSpec): string =>
  createHash('sha256')
    .update(JSON.stringify([spec.image, spec.uid, spec.binds, spec.network]))
    .digest('hex')
    .slice(0, 32);

const containerName = (environmentId: string) => `tws-${environmentId}`;

/** The container as the engine has it, or null when it is gone. */
async function inspectContainer(client: Docker, id: string): Promise<Docker.ContainerInspectInfo | null> {
  try {
    return await client.getContainer(id).inspect();
  } catch (err) {
    if (isEngineNotFound(err)) return null;
    throw typedFailure('executor_unavailable', { reason: 'engine_unreachable' });
  }
}

function runningOf(info: Docker.ContainerInspectInfo): RunningContainer | null {
  if (!info.State.Running || !info.State.Pid) return null;
  return { containerId: info.Id, initPid: info.State.Pid, cgroupProcs: containerCgroupProcs(info.State.Pid) };
}

/** This instance's container on this host (domain/instance.ts); an unlabelled older one only where records name its environment. */
export const isOurs = (
  labels: Record<string, string> | undefined,
  self: { hostId: string; instanceId: string },
  environmentId?: string,
): boolean =>
  labels?.[CONTAINER_LABELS.owner] === CONTAINER_OWNER &&
  labels?.[CONTAINER_LABELS.host] === self.hostId &&
  (labels?.[CONTAINER_LABELS.instance] === self.instanceId ||
    (environmentId !== undefined && labels?.[CONTAINER_LABELS.instance] === undefined)) &&
  (environmentId === undefined || labels?.[CONTAINER_LABELS.environment] === environmentId);

async function startedOf(client: Docker, info: Docker.ContainerInspectInfo): Promise<RunningContainer> {
  if (!info.State.Running) {
    try {
      await client.getContainer(info.Id).start();
    } catch {
      throw typedFailure('executor_unavailable', { reason: 'container_not_started' });
    }
    info = (await inspectContainer(client, info.Id)) ?? info;
  }
  const running = runningOf(info);
  if (!running) throw typedFailure('executor_unavailable', { reason: 'container_not_started' });
  return running;
}

/** Removes a container (its processes end with it); one already gone is fine. */
export async function removeContainerById(client: Docker, id: string): Promise<void> {
  try {
    await client.getContainer(id).remove({ force: true, v: true });
  } catch (err) {
    if (!isEngineNotFound(err)) throw err;
  }
}

function createOptions(
  spec: ContainerSpec,
  self: { hostId: string; instanceId: string },
  engine: EngineName,
  egressNetwork: string | null,
  nofile: number,
  layout: string,
): Docker.ContainerCreateOptions {
  const network =
    spec.network === 'none'
      ? 'none'
      : spec.network === 'host'
        ? 'host'
        : (egressNetwork ?? (engine === 'podman' ? 'slirp4netns' : 'bridge'));
  const nproc = spec.limits?.pids ?? 4096;
  return {
    name: containerName(spec.environmentId),
    Image: spec.image,
    Entrypoint: ['/bin/sleep'],
    Cmd: ['infinity'],
    User: `${spec.uid}:${spec.uid}`,
    WorkingDir: '/',
    Env: [],
    Labels: {
      [CONTAINER_LABELS.owner]: CONTAINER_OWNER,
      [CONTAINER_LABELS.host]: self.hostId,
      [CONTAINER_LABELS.instance]: self.instanceId,
      [CONTAINER_LABELS.environment]: spec.environmentId,
      [CONTAINER_LABELS.layout]: layout,
    },
    HostConfig: {
      Binds: spec.binds,
      NetworkMode: network,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      Tmpfs: { '/tmp': `rw,nosuid,nodev,mode=1777${spec.tmpBytes ? `,size=${spec.tmpBytes}` : ''}` },
      Ulimits: [
        { Name: 'nofile', Soft: nofile, Hard: nofile },
        { Name: 'nproc', Soft: nproc, Hard: nproc },
      ],
      ...(spec.limits
        ? {
            Memory: spec.limits.memoryBytes,
            MemorySwap: spec.limits.memoryBytes,
            PidsLimit: spec.limits.pids,
            NanoCpus: Math.round(spec.limits.cpus * 1e9),
          }
        : {}),
      RestartPolicy: { Name: 'no' },
    },
  };
}

/**
 * The environment's container, running: the recorded one when it is made as the spec says (started
 * again if it had stopped), else a new one. One made otherwise (another image or layout) is
 * removed and made again only when no agent runs in it; with agents in it the start is refused
 * (`workspace_reuse_unsafe`), as it is when the recorded container's labels do not say it is
 * this one (nothing is touched then). An engine that does not answer or an image not here refuses
 * the making, and nothing is left behind. Called inside an agent start, under its task rows' share
 * lock: the cleanup barrier is that start's to check (a second check here would wait, in another
 * transaction, behind an admission queued on the start's own lock).
 */
export async function ensureContainer(
  deps: Pick<ActivityDeps, 'pool' | 'config'>,
  spec: ContainerSpec,
): Promise<RunningContainer> {
  const { config } = deps;
  const { client, engine } = await requireEngine(config.containers);
  const layout = layoutDigest(spec);
  return inTransaction(deps.pool, async (db) => {
    await lockEnvironmentContainer(db, spec.environmentId);
    const row = await findContainer(db, spec.environmentId);
    if (row) {
      if (row.host_id !== config.hostId)
        throw typedFailure('workspace_reuse_unsafe', { reason: 'container_elsewhere' });
      const info = await inspectContainer(client, row.container_id);
      if (info && !isOurs(info.Config.Labels, config, spec.environmentId))
        throw typedFailure('workspace_reuse_unsafe', { reason: 'container_not_ours' });
      if (info && row.layout === layout) return startedOf(client, info);
      if (info) {
        const running = runningOf(info);
        if (running && processesInContainer(running) > 0)
          throw typedFailure('workspace_reuse_unsafe', { reason: 'container_in_use' });
        await removeContainerById(client, info.Id).catch(() => {
          throw typedFailure('executor_unavailable', { reason: 'engine_unreachable' });
        });
      }
      await dropContainerRecord(db, spec.environmentId, row.container_id);
    }
    await requireImage(client, spec.image);
    // A container of this name that no record holds: a start that died between making it and
    // recording it. Ours (its labels say so, for this environment) is removed; anything else keeps the name, and the start is refused.
    const leftover = await inspectContainer(client, containerName(spec.environmentId));
    if (leftover) {
      if (!isOurs(leftover.Config.Labels, config, spec.environmentId))
        throw typedFailure('workspace_reuse_unsafe', { reason: 'container_name_taken' });
      await removeContainerById(client, leftover.Id);
    }
    let created: Docker.Container;
    try {
      created = await client.createContainer(
        createOptions(spec, config, engine, config.containers.egressNetwork, config.containers.nofile, layout),
      );
    } catch (err) {
      if (isEngineNotFound(err)) throw typedFailure('container_image_missing');
      throw typedFailure('executor_unavailable', { reason: 'container_not_created' });
    }
    try {
      await created.start();
      const info = await inspectContainer(client, created.id);
      const running = info ? runningOf(info) : null;
      if (!running) throw typedFailure('executor_unavailable', { reason: 'container_not_started' });
      await recordContainer(db, {
        environment_id: spec.environmentId,
        host_id: config.hostId,
        container_id: created.id,
        image: spec.image,
        layout,
      });
      return running;
    } catch (err) {
      // Nothing is left behind: the container goes (its record is rolled back with this transaction).
      await removeContainerById(client, created.id).catch(() => undefined);
      throw err instanceof ApplicationFailure
        ? err
        : typedFailure('executor_unavailable', { reason: 'container_not_started' });
    }
  });
}

/**
 * Removes an environment's recorded container on this host, and its record: `removed`, `none`
 * (no container recorded here, or it was gone already). Its agents were stopped before; anything
 * still in it ends with it. An engine that does not answer throws (the cleanup retries it).
 */
export async function removeEnvironmentContainer(
  deps: Pick<ActivityDeps, 'pool' | 'config'>,
  environmentId: string,
): Promise<'removed' | 'none'> {
  return inTransaction(deps.pool, async (db) => {
    await lockEnvironmentContainer(db, environmentId);
    const row = await findContainer(db, environmentId);
    if (!row || row.host_id !== deps.config.hostId) return 'none';
    const { client } = await requireEngine(deps.config.containers);
    const info = await inspectContainer(client, row.container_id);
    // One whose labels do not say it is this environment's is never removed: only its record goes.
    const ours = info !== null && isOurs(info.Config.Labels, deps.config, environmentId);
    if (ours) await removeContainerById(client, info.Id);
    await dropContainerRecord(db, environmentId, row.container_id);
    return ours ? 'removed' : 'none';
  });
}

/**
 * A first launch's undo: the environment's container goes with the workspace it made, when no
 * agent runs in it (one that does is another session's, and stays). One the engine cannot be asked
 * about stays too, recorded, for the task's cleanup or the orphan sweep.
 */
export async function removeIdleContainer(
  deps: Pick<ActivityDeps, 'pool' | 'config'>,
  environmentId: string,
): Promise<void> {
  await inTransaction(deps.pool, async (db) => {
    await lockEnvironmentContainer(db, environmentId);
    const row = await findContainer(db, environmentId);
    if (!row || row.host_id !== deps.config.hostId) return;
    const { client } = await requireEngine(deps.config.containers);
    const info = await inspectContainer(client, row.container_id);
    if (info && !isOurs(info.Config.Labels, deps.config, environmentId)) return;
    const running = info ? runningOf(info) : null;
    if (running && processesInContainer(running) > 0) return;
    if (info) await removeContainerById(client, info.Id);
    await dropContainerRecord(db, environmentId, row.container_id);
  });
}

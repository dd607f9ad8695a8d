/**
 * The orphan sweep's part for containers: a container labelled as this service's on this host
 * whose record is gone (its task cleaned while the engine was away, a start that died between
 * making it and recording it) is removed once older than the grace period. What it cannot prove
 * ours (no label, another host's or another instance's on this host, too new) it never touches; with no engine configured it does nothing.
 */
import { recordedContainerIds } from '../../db/containers';
import type { ActivityDeps } from '../support/deps';
import { CONTAINER_LABELS, CONTAINER_OWNER, isOurs, removeContainerById } from './containers';
import { engineClient } from './engine';

export interface ContainerSweep {
  removed: string[];
  kept: { id: string; reason: 'recent' | 'doubt' }[];
}

export async function sweepContainers(
  deps: Pick<ActivityDeps, 'pool' | 'config' | 'logger'>,
  input: { graceMs: number; dryRun: boolean },
): Promise<ContainerSweep | null> {
  const client = await engineClient(deps.config.containers);
  if (!client) return null;
  const result: ContainerSweep = { removed: [], kept: [] };
  let listed;
  try {
    listed = await client.listContainers({
      all: true,
      filters: {
        label: [
          `${CONTAINER_LABELS.owner}=${CONTAINER_OWNER}`,
          `${CONTAINER_LABELS.host}=${deps.config.hostId}`,
          `${CONTAINER_LABELS.instance}=${deps.config.instanceId}`,
        ],
      },
    });
  } catch (err) {
    // The engine does not answer: nothing is judged, nothing removed.
    deps.logger.warn({ err }, 'orphan sweep could not list containers; none is removed');
    return result;
  }
  // Read after the listing: a container recorded meanwhile is known; one made after the listing is not in it.
  const recorded = await recordedContainerIds(deps.pool, deps.config.hostId);
  const now = Date.now();
  for (const container of listed) {
    const id = container.Id;
    if (recorded.has(id)) continue;
    if (!isOurs(container.Labels, deps.config)) {
      result.kept.push({ id: id.slice(0, 12), reason: 'doubt' });
      continue;
    }
    if (now - container.Created * 1000 < input.graceMs) {
      result.kept.push({ id: id.slice(0, 12), reason: 'recent' });
      continue;
    }
    if (!input.dryRun) {
      try {
        await removeContainerById(client, id);
      } catch (err) {
        deps.logger.warn({ err }, 'orphan sweep could not remove a container; it is kept');
        result.kept.push({ id: id.slice(0, 12), reason: 'doubt' });
        continue;
      }
    }
    result.removed.push(id.slice(0, 12));
  }
  return result;
}

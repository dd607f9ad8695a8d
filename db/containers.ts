/**
 * The container each task environment's `container` agents run in (executors/container/): one row
 * per environment, naming its engine id, the image and the bind layout it was made with, and the
 * host whose engine holds it. Written by the agent start that makes it and removed with the container.
 */
import type { Db } from './pool';

export interface ContainerRow {
  environment_id: string;
  host_id: string;
  container_id: string;
  image: string;
  layout: string;
}

/** Held for the length of the caller's transaction: one maker or remover of an environment's container at a time. */
export async function lockEnvironmentContainer(db: Db, environmentId: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`container:${environmentId}`]);
}

export async function findContainer(db: Db, environmentId: string): Promise<ContainerRow | null> {
  const res = await db.query<ContainerRow>(
    'SELECT environment_id, host_id, container_id, image, layout FROM environment_containers WHERE environment_id = $1',
    [environmentId],
  );
  return res.rows[0] ?? null;
}

export async function recordContainer(db: Db, row: ContainerRow): Promise<void> {
  await db.query(
    `INSERT INTO environment_containers (environment_id, host_id, container_id, image, layout) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (environment_id) DO UPDATE SET host_id = $2, container_id = $3, image = $4, layout = $5, created_at = now()`,
    [row.environment_id, row.host_id, row.container_id, row.image, row.layout],
  );
}

export async function dropContainerRecord(db: Db, environmentId: string, containerId: string): Promise<void> {
  await db.query('DELETE FROM environment_containers WHERE environment_id = $1 AND container_id = $2', [
    environmentId,
    containerId,
  ]);
}

/** The engine ids of a host's recorded containers (the orphan sweep keeps these). */
export async function recordedContainerIds(db: Db, hostId: string): Promise<Set<string>> {
  const res = await db.query<{ container_id: string }>(
    'SELECT container_id FROM environment_containers WHERE host_id = $1',
    [hostId],
  );
  return new Set(res.rows.map((r) => r.container_id));
}

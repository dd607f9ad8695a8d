/**
 * The host's environments left by earlier scenarios, set aside while a scenario that acts on a
 * whole host runs: an idle release judges every environment of the host (the 100,000 seeded by
 * growth look idle for weeks, and a release takes the 500 oldest first), and the disk
 * measurement walks every workspace the host holds (seeded rows have no folder). Parked, their
 * rows name another host; nothing launches on them meanwhile, and they are put back after.
 */
import type pg from 'pg';

const PARKED_HOST = 'bench-parked';

export async function parkHostEnvironments(
  pool: pg.Pool,
  hostId: string,
): Promise<{ parked: number; unpark(): Promise<void> }> {
  const res = await pool.query(`UPDATE task_environments SET host_id = $2 WHERE host_id = $1`, [hostId, PARKED_HOST]);
  // The update leaves as many dead rows: vacuumed now, not by autovacuum during the measurement.
  await pool.query('VACUUM ANALYZE task_environments');
  return {
    parked: res.rowCount ?? 0,
    async unpark() {
      await pool.query(`UPDATE task_environments SET host_id = $1 WHERE host_id = $2`, [hostId, PARKED_HOST]);
      await pool.query('VACUUM ANALYZE task_environments');
    },
  };
}

import type { Db } from './pool';

/** Labels serialize in a fixed key order so one label set is one row. */
export function labelKey(labels: Record<string, string>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b))));
}

export async function incrementCounter(db: Db, name: string, labels: Record<string, string>, by = 1): Promise<void> {
  await db.query(
    `INSERT INTO metric_counters (name, labels, value) VALUES ($1, $2, $3)
     ON CONFLICT (name, labels) DO UPDATE SET value = metric_counters.value + EXCLUDED.value`,
    [name, labelKey(labels), by],
  );
}

export async function readCounters(db: Db, name: string): Promise<{ labels: Record<string, string>; value: number }[]> {
  const res = await db.query<{ labels: string; value: string }>(
    'SELECT labels, value FROM metric_counters WHERE name = $1',
    [name],
  );
  return res.rows.map((r) => ({ labels: JSON.parse(r.labels) as Record<string, string>, value: Number(r.value) }));
}

/**
 * One page of a list, newest first, by keyset: rows strictly before the previous page's last
 * (time, key), never OFFSET, so a page costs the same deep in a large table (migration 013 has
 * an index per list's filter and order). Filters are added only when given, so each query the
 * planner sees names exactly the columns its index covers.
 */
import type { Db } from './pool';

/** The last row of the previous page: its time as PostgreSQL prints it (`::text`, microseconds) and its key. */
export interface Keyset {
  at: string;
  key: string;
}

export interface PageOf {
  limit: number;
  after: Keyset | null;
}

export interface KeysetList {
  /** Columns to select (besides the row's exact time, added as `exact_at`). */
  columns: string;
  table: string;
  time: string;
  key: string;
  keyType: 'uuid' | 'text';
  /** Equality filters, column to value; an undefined value is no filter. */
  equal?: Record<string, unknown>;
  /** Conditions without a value (`archived_at IS NULL`); null is none. */
  where?: (string | null)[];
  /** Conditions with one value (`EXISTS (… = $n)`), given its placeholder; an undefined value is no filter. */
  whereValue?: { value: unknown; condition: (placeholder: string) => string }[];
}

export async function newestFirst<R>(db: Db, list: KeysetList, page: PageOf): Promise<(R & { exact_at: string })[]> {
  const params: unknown[] = [];
  const param = (value: unknown) => `$${params.push(value)}`;
  const conditions = [
    ...Object.entries(list.equal ?? {}).flatMap(([column, value]) =>
      value === undefined ? [] : [`${column} = ${param(value)}`],
    ),
    ...(list.where ?? []).filter((c): c is string => c !== null),
    ...(list.whereValue ?? []).flatMap(({ value, condition }) =>
      value === undefined ? [] : [condition(param(value))],
    ),
  ];
  if (page.after)
    conditions.push(
      `(${list.time}, ${list.key}) < (${param(page.after.at)}::timestamptz, ${param(page.after.key)}::${list.keyType})`,
    );
  const res = await db.query<R & { exact_at: string }>(
    `SELECT ${list.columns}, ${list.time}::text AS exact_at FROM ${list.table}
      ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''}
      ORDER BY ${list.time} DESC, ${list.key} DESC LIMIT ${param(page.limit)}`,
    params,
  );
  return res.rows;
}

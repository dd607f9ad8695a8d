/**
 * Every list of the API pages the same way: `limit` (1 to 200, default 50), an opaque `cursor`,
 * and the answer `{ items, nextCursor }` (null on the last page). The cursor is a keyset: the
 * last row's time, as PostgreSQL prints it (microseconds: a JavaScript date keeps only
 * milliseconds, and rows made in one statement share a time), and its key (an id, or a ref),
 * so a page never skips or repeats a row when rows are added meanwhile, and no page costs an
 * OFFSET scan. Query values are strings (the gateway's ajv does not coerce), hence the patterns.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { Keyset, PageOf } from '../../db/keyset';
import { badRequest } from './api-error';

export const DEFAULT_PAGE_LIMIT = 50;

/** The paging fields of a list's query, spread into its schema (`additionalProperties: false` there). */
export const PageQueryFields = {
  limit: Type.Optional(Type.String({ pattern: '^(200|1[0-9]{2}|[1-9][0-9]?)$', description: '1 to 200 (default 50)' })),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 400,
      pattern: '^[A-Za-z0-9_-]+$',
      description: 'nextCursor of the previous page',
    }),
  ),
};

export const pageOf = <T extends TSchema>(item: T) =>
  Type.Object({ items: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) });

const PG_TIMESTAMP = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d(:\d\d)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Lists keyed by a row id (every list but saved work, which is keyed by its ref). */
const isUuidKey = (key: string): boolean => UUID.test(key);

/** What a list's query asks for: how many rows, after which one. A cursor this API did not give is a 400. */
export function pageRequest(
  query: { limit?: string; cursor?: string },
  isKey: (key: string) => boolean = isUuidKey,
): PageOf {
  const limit = query.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(query.limit);
  if (query.cursor === undefined) return { limit, after: null };
  try {
    const value = JSON.parse(Buffer.from(query.cursor, 'base64url').toString('utf8')) as { t?: unknown; k?: unknown };
    if (
      typeof value.t === 'string' &&
      PG_TIMESTAMP.test(value.t) &&
      typeof value.k === 'string' &&
      value.k.length <= 300 &&
      isKey(value.k)
    )
      return { limit, after: { at: value.t, key: value.k } };
  } catch {
    // fall through
  }
  throw badRequest('The cursor is not one this list gave.');
}

/** A list's answer to its query: the page it asks for, read by `read` (with the lookahead row). */
export async function readPage<R extends { exact_at: string }, I>(
  query: { limit?: string; cursor?: string },
  read: (page: PageOf) => Promise<R[]>,
  keyOf: (row: R) => string,
  view: (row: R) => I,
): Promise<{ items: I[]; nextCursor: string | null }> {
  const page = pageRequest(query);
  return pageAnswer(await read(lookahead(page)), page.limit, keyOf, view);
}

/** What to read for a page: one row more than it shows, which says whether another page follows. */
export const lookahead = (page: PageOf): PageOf => ({ limit: page.limit + 1, after: page.after });

/**
 * The answer for rows read with `lookahead(page)` (their `exact_at` is the time the keyset
 * orders by): the page's items and the cursor of its last row.
 */
export function pageAnswer<R extends { exact_at: string }, I>(
  rows: R[],
  limit: number,
  keyOf: (row: R) => string,
  view: (row: R) => I,
): { items: I[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const next: Keyset | null =
    rows.length > limit && last !== undefined ? { at: last.exact_at, key: keyOf(last) } : null;
  return {
    items: page.map(view),
    nextCursor: next && Buffer.from(JSON.stringify({ t: next.at, k: next.key })).toString('base64url'),
  };
}

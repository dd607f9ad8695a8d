/**
 * Idempotency-Key of launch and resume: the first request with a key names the session; every
 * later request with the same key in the same scope gets it back, so a client that retries after
 * a lost answer never makes a second session. (A resume's run is derived from its key; the
 * `run_number` column of earlier resumes is no longer written.)
 */
import type { Db } from './pool';

export type KeyClaim = { kind: 'claimed' | 'replayed'; sessionId: string } | { kind: 'mismatch' };

export async function claimIdempotencyKey(
  db: Db,
  req: { scope: string; key: string; fingerprint: string; sessionId: string },
): Promise<KeyClaim> {
  const existing = async (): Promise<KeyClaim | null> => {
    const row = (
      await db.query<{ fingerprint: string; session_id: string }>(
        'SELECT fingerprint, session_id FROM idempotency_keys WHERE scope = $1 AND key = $2',
        [req.scope, req.key],
      )
    ).rows[0];
    if (!row) return null;
    return row.fingerprint === req.fingerprint ? { kind: 'replayed', sessionId: row.session_id } : { kind: 'mismatch' };
  };
  const before = await existing();
  if (before) return before;
  const inserted = await db.query(
    'INSERT INTO idempotency_keys (scope, key, fingerprint, session_id) VALUES ($1, $2, $3, $4) ON CONFLICT (scope, key) DO NOTHING',
    [req.scope, req.key, req.fingerprint, req.sessionId],
  );
  if (inserted.rowCount === 1) return { kind: 'claimed', sessionId: req.sessionId };
  // A concurrent request with the same key claimed it first: that one's session is this one's.
  return (await existing()) ?? { kind: 'mismatch' };
}

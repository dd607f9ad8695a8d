/**
 * Idempotency-Key of launch and resume: the first request with a key names the session (and,
 * for a resume, its run number); every later request with the same key in the same scope gets
 * those back, so a client that retries after a lost answer never makes a second session.
 */
import type { Db } from './pool';

export type KeyClaim = { kind: 'claimed' | 'replayed'; sessionId: string; runNumber: number | null } | { kind: 'mismatch' };

export async function claimIdempotencyKey(
  db: Db,
  req: { scope: string; key: string; fingerprint: string; sessionId: string; runNumber: () => Promise<number | null> },
): Promise<KeyClaim> {
  const existing = async (): Promise<KeyClaim | null> => {
    const row = (await db.query<{ fingerprint: string; session_id: string; run_number: number | null }>('SELECT fingerprint, session_id, run_number FROM idempotency_keys WHERE scope = $1 AND key = $2', [req.scope, req.key])).rows[0];
    if (!row) return null;
    return row.fingerprint === req.fingerprint ? { kind: 'replayed', sessionId: row.session_id, runNumber: row.run_number } : { kind: 'mismatch' };
  };
  const before = await existing();
  if (before) return before;
  const runNumber = await req.runNumber();
  const inserted = await db.query(
    'INSERT INTO idempotency_keys (scope, key, fingerprint, session_id, run_number) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, key) DO NOTHING',
    [req.scope, req.key, req.fingerprint, req.sessionId, runNumber],
  );
  if (inserted.rowCount === 1) return { kind: 'claimed', sessionId: req.sessionId, runNumber };
  // A concurrent request with the same key claimed it first: that one's session is this one's.
  return (await existing()) ?? { kind: 'mismatch' };
}

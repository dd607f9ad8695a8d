/**
 * The host uid each workspace's agents run as: one per owner, never shared by two
 * owners, taken from the operator's range (TWS_AGENT_UIDS). The first free one is taken, in one
 * statement; two owners racing for it meet the unique index and the loser takes the next. A row
 * is never deleted nor changed, so an owner's uid, once read, is kept in this process for the next
 * start (one query less on the path of every sandboxed attach).
 */
import type { UidRange } from '../domain/agent-settings';
import type { Db } from './pool';

export class AgentUidsExhausted extends Error {
  constructor() {
    super('every uid of TWS_AGENT_UIDS is taken');
    this.name = 'AgentUidsExhausted';
  }
}

/** The owner of a worktree environment's files: the task whose environment it is. */
export const environmentUidOwner = (environmentTaskId: string): string => `task:${environmentTaskId}`;

/** Owner → uid, per database (a process may serve several, as the tests do). */
const known = new WeakMap<Db, Map<string, number>>();

export async function agentUidOf(db: Db, owner: string, range: UidRange): Promise<number> {
  const seen = known.get(db)?.get(owner);
  if (seen !== undefined) return seen;
  const uid = await takeAgentUid(db, owner, range);
  if (!known.has(db)) known.set(db, new Map());
  known.get(db)!.set(owner, uid);
  return uid;
}

async function takeAgentUid(db: Db, owner: string, range: UidRange): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const { rows } = await db.query<{ uid: string }>(
      `WITH existing AS (SELECT uid FROM agent_uids WHERE owner = $1),
       free AS (
         SELECT min(c.u) AS uid FROM (
           SELECT $2::bigint AS u
           UNION ALL SELECT uid + 1 FROM agent_uids WHERE uid >= $2 AND uid < $3
         ) c
         WHERE NOT EXISTS (SELECT 1 FROM agent_uids a WHERE a.uid = c.u) AND NOT EXISTS (SELECT 1 FROM existing)
       ),
       inserted AS (
         INSERT INTO agent_uids (owner, uid) SELECT $1, uid FROM free WHERE uid IS NOT NULL
         ON CONFLICT DO NOTHING RETURNING uid
       )
       SELECT uid FROM existing UNION ALL SELECT uid FROM inserted UNION ALL
       SELECT -1 FROM free WHERE uid IS NULL AND NOT EXISTS (SELECT 1 FROM existing)`,
      [owner, range.first, range.last],
    );
    const uid = rows[0] ? Number(rows[0].uid) : null;
    if (uid === -1) throw new AgentUidsExhausted();
    if (uid !== null) return uid;
    // Another owner took that uid (or this owner's row was written meanwhile): read again.
  }
  throw new Error('no agent uid could be taken after 20 tries');
}

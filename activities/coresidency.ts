/**
 * Records co-residency before an agent process starts [R5]. Reads the task's sibling sessions
 * in a working state (a shared lock with a short lock timeout, so a sibling mid-transition is
 * read as committed or not at all), counts and logs. It never throws: an observation must not
 * refuse, defer or fail a launch.
 */
import { inTransaction } from '../db/pool';
import { incrementCounter } from '../db/metric-counters';
import { CORESIDENCY_ADMITTED_TOTAL, CORESIDENCY_SKIPPED_TOTAL, skipReasonOf, type CoresidencyObservation, type CoresidencySite } from '../domain/coresidency';
import type { ActivityDeps } from './deps';

export function coresidencyActivities({ pool, config, logger }: ActivityDeps) {
  return {
    /**
     * Keyed by the environment the agent works in (absent in inputs recorded before: the task),
     * so a child task's agent in its parent's worktree, or a group member's, is observed too.
     */
    async observeCoresidency(input: { sessionId: string; taskId: string; environmentId?: string; site: CoresidencySite }): Promise<CoresidencyObservation> {
      let observation: CoresidencyObservation;
      try {
        const siblings = await inTransaction(pool, async (client) => {
          await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(config.observationLockTimeoutMs))}`);
          const res = await client.query<{ id: string }>(
            `SELECT id FROM sessions WHERE (CASE WHEN $3::uuid IS NULL THEN task_id = $1 ELSE environment_id = $3::uuid END)
                AND id <> $2 AND state IN ('starting', 'running') ORDER BY id FOR SHARE`,
            [input.taskId, input.sessionId, input.environmentId ?? null],
          );
          return res.rows.map((r) => r.id);
        });
        observation = siblings.length > 0 ? { outcome: 'coresident', siblingSessionIds: siblings } : { outcome: 'alone' };
      } catch (err) {
        observation = { outcome: 'skipped', reason: skipReasonOf((err as { code?: string }).code) };
      }
      try {
        if (observation.outcome !== 'alone') {
          await pool.query('INSERT INTO coresidency_observations (session_id, site, outcome, sibling_session_ids, reason) VALUES ($1, $2, $3, $4, $5)', [
            input.sessionId,
            input.site,
            observation.outcome,
            observation.outcome === 'coresident' ? observation.siblingSessionIds : [],
            observation.outcome === 'skipped' ? observation.reason : null,
          ]);
        }
        if (observation.outcome === 'coresident') {
          await incrementCounter(pool, CORESIDENCY_ADMITTED_TOTAL, { site: input.site });
          logger.warn({ event: 'session_coresidency', site: input.site, sessionId: input.sessionId, taskId: input.taskId, siblingSessionIds: observation.siblingSessionIds }, 'agent session starts beside other working sessions of the task');
        } else if (observation.outcome === 'skipped') {
          await incrementCounter(pool, CORESIDENCY_SKIPPED_TOTAL, { reason: observation.reason });
          logger.warn({ event: 'session_coresidency_skipped', site: input.site, sessionId: input.sessionId, reason: observation.reason }, 'co-residency observation skipped');
        }
      } catch (err) {
        logger.error({ err, sessionId: input.sessionId }, 'co-residency observation could not be recorded');
      }
      return observation;
    },
  };
}

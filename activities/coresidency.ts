/**
 * Records co-residency before an agent process starts [R5]. Reads the task's sibling sessions
 * in a working state (a shared lock with a short lock timeout, so a sibling mid-transition is
 * read as committed or not at all), counts and logs. It never throws: an observation must not
 * refuse, defer or fail a launch.
 */
import { inTransaction, type Db } from '../db/pool';
import { labelKey } from '../db/metric-counters';
import {
  CORESIDENCY_ADMITTED_TOTAL,
  CORESIDENCY_SKIPPED_TOTAL,
  skipReasonOf,
  type CoresidencyObservation,
  type CoresidencySite,
} from '../domain/coresidency';
import type { ActivityDeps } from '../executors/support/deps';

export interface CoresidencyInput {
  sessionId: string;
  taskId: string;
  environmentId?: string;
  site: CoresidencySite;
}

/** The parts of an observation, for a step that records it with the agent's start (activities/launch-agent.ts). */
export function coresidencySteps({ pool, config, logger }: ActivityDeps) {
  /** The sibling sessions working beside this one, or why they could not be read. */
  async function readCoresidency(input: CoresidencyInput): Promise<CoresidencyObservation> {
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
      return siblings.length > 0 ? { outcome: 'coresident', siblingSessionIds: siblings } : { outcome: 'alone' };
    } catch (err) {
      return { outcome: 'skipped', reason: skipReasonOf((err as { code?: string }).code) };
    }
  }

  /**
   * The observation's row and counter, written with `db` (the agent's start transaction, so a
   * start that is refused records nothing). A savepoint keeps a failed write from failing the
   * start; it is logged instead. True when something was written.
   */
  async function recordCoresidency(
    db: Db,
    input: CoresidencyInput,
    observation: CoresidencyObservation,
  ): Promise<boolean> {
    if (observation.outcome === 'alone') return false;
    await db.query('SAVEPOINT coresidency');
    try {
      // The row and its counter in one statement (db/metric-counters.ts `incrementCounter`'s upsert).
      const counter: { name: string; labels: Record<string, string> } =
        observation.outcome === 'coresident'
          ? { name: CORESIDENCY_ADMITTED_TOTAL, labels: { site: input.site } }
          : { name: CORESIDENCY_SKIPPED_TOTAL, labels: { reason: observation.reason } };
      // observed_at is the moment of the record (the start's transaction began earlier): it is
      // before the agent's spawn, which follows in this transaction [R5.1].
      await db.query(
        `WITH observed AS (
           INSERT INTO coresidency_observations (session_id, site, outcome, sibling_session_ids, reason, observed_at) VALUES ($1, $2, $3, $4, $5, clock_timestamp()) RETURNING 1)
         INSERT INTO metric_counters (name, labels, value) SELECT $6, $7, 1 FROM observed
         ON CONFLICT (name, labels) DO UPDATE SET value = metric_counters.value + EXCLUDED.value`,
        [
          input.sessionId,
          input.site,
          observation.outcome,
          observation.outcome === 'coresident' ? observation.siblingSessionIds : [],
          observation.outcome === 'skipped' ? observation.reason : null,
          counter.name,
          labelKey(counter.labels),
        ],
      );
      await db.query('RELEASE SAVEPOINT coresidency');
      return true;
    } catch (err) {
      await db.query('ROLLBACK TO SAVEPOINT coresidency');
      logger.error({ err, sessionId: input.sessionId }, 'co-residency observation could not be recorded');
      return false;
    }
  }

  /** The structured warning of a recorded observation, before the agent's process starts [R5.1]. */
  function reportCoresidency(input: CoresidencyInput, observation: CoresidencyObservation, executionId?: string): void {
    if (observation.outcome === 'coresident') {
      logger.warn(
        {
          event: 'session_coresidency',
          site: input.site,
          sessionId: input.sessionId,
          ...(executionId ? { executionId } : {}),
          taskId: input.taskId,
          siblingSessionIds: observation.siblingSessionIds,
        },
        'agent session is starting beside other working sessions of the task',
      );
    } else if (observation.outcome === 'skipped') {
      logger.warn(
        {
          event: 'session_coresidency_skipped',
          site: input.site,
          sessionId: input.sessionId,
          reason: observation.reason,
        },
        'co-residency observation skipped',
      );
    }
  }

  return { readCoresidency, recordCoresidency, reportCoresidency };
}

export function coresidencyActivities(deps: ActivityDeps) {
  const { readCoresidency, recordCoresidency, reportCoresidency } = coresidencySteps(deps);
  return {
    /**
     * Keyed by the environment the agent works in (absent in inputs recorded before: the task),
     * so a child task's agent in its parent's worktree, or a group member's, is observed too.
     * The standalone step (recorded histories, the bench); a launch records with its start.
     */
    async observeCoresidency(input: CoresidencyInput): Promise<CoresidencyObservation> {
      const observation = await readCoresidency(input);
      // An observation never changes a launch's outcome: a failed write is logged and not reported.
      const recorded = await inTransaction(deps.pool, (client) => recordCoresidency(client, input, observation)).catch(
        (err: unknown) => {
          deps.logger.warn({ err, sessionId: input.sessionId }, 'co-residency observation not recorded');
          return false;
        },
      );
      if (recorded) reportCoresidency(input, observation);
      return observation;
    },
  };
}

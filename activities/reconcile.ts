/**
 * The periodic consistency check's steps. Records: an active cleanup job whose
 * workflow closed is continued by a new run from its snapshot; a session left `starting` by a
 * closed launch is settled. Host: agents recorded running that are gone, and spawn intents whose
 * start died unrecorded. Every repair is counted; a row the engine cannot speak for is left.
 */
import { Context } from '@temporalio/activity';
import { incrementCounter } from '../db/metric-counters';
import { inTransaction } from '../db/pool';
import { moveSessionState } from '../db/sessions';
import { dropSpawnIntent, staleSpawnIntents } from '../db/spawn-intents';
import { findExecution } from '../db/executions';
import type { CleanupTrigger } from '../domain/cleanup';
import { startPreparedJob } from '../executors/support/follow-up-starts';
import {
  isStranded,
  RECONCILE_MIN_AGE_MS,
  RECONCILE_REPAIRED_TOTAL,
  type ReconcileReport,
  type RepairKind,
} from '../domain/reconcile';
import { sessionRunWorkflowId } from '../domain/workflow-ids';
import type { ActivityDeps } from '../executors/support/deps';
import { recoverAgents } from '../executors/registry';
import { workflowLiveness } from './workflow-liveness';
import { stopMarkedGroup } from '../executors/host/process-identity';

export function reconcileActivities(deps: ActivityDeps) {
  const { pool, config, logger } = deps;
  const count = async (report: ReconcileReport, kind: RepairKind, n = 1) => {
    if (n === 0) return;
    report.repaired[kind] = (report.repaired[kind] ?? 0) + n;
    await incrementCounter(pool, RECONCILE_REPAIRED_TOTAL, { kind }, n);
  };

  return {
    async repairStrandedRecords(): Promise<ReconcileReport> {
      const report: ReconcileReport = { repaired: {}, undecided: 0 };
      const ageSecs = RECONCILE_MIN_AGE_MS / 1000;

      // 1. Active cleanup jobs (prepared ones have their snapshot) whose workflow is closed.
      const jobs = await pool.query<{
        operation_id: string;
        task_id: string;
        trigger: CleanupTrigger;
        workflow_id: string;
        batch_workflow_id: string | null;
        discard_changes: boolean;
      }>(
        `SELECT operation_id, task_id, trigger, workflow_id, batch_workflow_id, discard_changes FROM cleanup_jobs
          WHERE state IN ('pending', 'running', 'retry_wait', 'needs_operator') AND updated_at < now() - make_interval(secs => $1)
          ORDER BY updated_at LIMIT 100`,
        [ageSecs],
      );
      for (const job of jobs.rows) {
        // Carried out by a bulk cleanup's batch whose workflow runs: not stranded. (Its batch
        // gone, the job's own run is started: it drops the claim and goes on.)
        if (job.batch_workflow_id && !isStranded(await workflowLiveness(job.batch_workflow_id))) continue;
        const liveness = await workflowLiveness(job.workflow_id);
        if (liveness === 'unknown') report.undecided++;
        if (!isStranded(liveness)) continue;
        // A follow-up whose start was lost after its trigger committed has no run at all: started here too.
        const started = await startPreparedJob(Context.current().client, config, {
          operationId: job.operation_id,
          taskId: job.task_id,
          trigger: job.trigger,
          workflowId: job.workflow_id,
          discardChanges: job.discard_changes,
        });
        if (!started) continue; // another check got there first
        logger.warn(
          { operationId: job.operation_id, taskId: job.task_id },
          'cleanup job outlived its workflow; continued by a new run',
        );
        await count(report, 'cleanup_job_resumed');
      }

      // 2. Sessions still `starting` whose launch (or admitted resume) closed: the agent it recorded decides.
      const starting = await pool.query<{ id: string; admitted_run: string | null }>(
        `SELECT id, admitted_run FROM sessions WHERE state = 'starting' AND updated_at < now() - make_interval(secs => $1) ORDER BY updated_at LIMIT 100`,
        [ageSecs],
      );
      for (const s of starting.rows) {
        const liveness = await workflowLiveness(sessionRunWorkflowId(s.id, s.admitted_run));
        if (liveness === 'unknown') report.undecided++;
        if (!isStranded(liveness)) continue;
        const settled = await inTransaction(pool, async (client) => {
          const running = await client.query(`SELECT 1 FROM executions WHERE session_id = $1 AND status = 'running'`, [
            s.id,
          ]);
          return moveSessionState(client, s.id, ['starting'], running.rowCount ? 'running' : 'failed');
        });
        if (settled) await count(report, 'session_settled');
      }
      return report;
    },

    async reconcileHostProcesses(): Promise<ReconcileReport> {
      const report: ReconcileReport = { repaired: {}, undecided: 0 };
      await count(report, 'execution_vanished', (await recoverAgents(deps, config.hostId)).vanished);
      for (const intent of await staleSpawnIntents(pool, config.hostId, RECONCILE_MIN_AGE_MS)) {
        // Recorded meanwhile (an adoption): only the intent is left over.
        if (await findExecution(pool, intent.executionId)) {
          await dropSpawnIntent(pool, intent.executionId);
          continue;
        }
        if (!(await stopMarkedGroup(intent.executionId, config.agentStopGraceMs))) continue; // tried again next time
        await dropSpawnIntent(pool, intent.executionId);
        await count(report, 'spawn_intent_stopped');
      }
      return report;
    },
  };
}

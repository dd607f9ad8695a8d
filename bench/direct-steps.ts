/**
 * Profiling evidence: the launch workflow's activities called directly in this process, one
 * after the other, with the product's own factories (activities/index.ts). Their sum is what a
 * launch costs without Temporal; the workflow's duration minus this sum is orchestration
 * (task-queue round trips, workflow tasks, the SDK).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { createHostActivities, createRecordActivities } from '../activities';
import { loadConfig } from '../domain/config';
import type { LaunchPlan, LaunchRequest } from '../domain/launch';
import { AGENT_COMMAND } from './api';
import type { BenchContext } from './context';
import { summarize, type LatencySummary } from './stats';

export type StepTimings = Record<string, LatencySummary>;

export async function timeLaunchSteps(
  ctx: BenchContext,
  taskIds: string[],
  role: LaunchPlan['role'],
): Promise<StepTimings> {
  const config = {
    ...loadConfig(
      { TWS_DATA_DIR: `${ctx.floorRoot}/../direct`, TWS_HOST_ID: 'bench' },
      { cwd: ctx.services.scratch, hostname: 'bench' },
    ),
    workspaceRoot: ctx.services.workspaceRoot,
  };
  const deps = { pool: ctx.pool, config, logger: pino({ level: 'silent' }) };
  const records = createRecordActivities(deps);
  const host = createHostActivities(deps);
  const samples: Record<string, number[]> = {};
  const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const start = performance.now();
    const value = await fn();
    (samples[name] ??= []).push(performance.now() - start);
    return value;
  };

  for (const taskId of taskIds) {
    const req: LaunchRequest = {
      sessionId: randomUUID(),
      taskId,
      executorType: 'worktree',
      agentProfile: 'shell',
      command: AGENT_COMMAND,
      name: null,
      hostId: 'bench',
    };
    const start = performance.now();
    const plan = await timed('admitLaunch', () => records.admitLaunch(req));
    if (plan.role !== role) throw new Error(`direct steps: ${plan.role}, expected ${role}`);
    if (role === 'materialized') {
      const made = await timed('materializeWorkspace', () => host.materializeWorkspace(plan));
      await timed('publishInventory', () => records.publishInventory(plan, made));
    } else {
      await timed('validateWorkspace', () => host.validateWorkspace(plan));
    }
    await timed('observeCoresidency', () =>
      records.observeCoresidency({ sessionId: plan.sessionId, taskId: plan.taskId, site: 'launch' }),
    );
    await timed('startAgent', () =>
      host.startAgent({
        executionId: randomUUID(),
        sessionId: plan.sessionId,
        taskId: plan.taskId,
        environmentId: plan.environmentId,
        environmentTaskId: plan.environmentTaskId,
        cwd: plan.workspacePath,
        command: AGENT_COMMAND,
      }),
    );
    await timed('markSessionRunning', () => records.markSessionRunning(plan.sessionId));
    (samples.total ??= []).push(performance.now() - start);
  }
  return Object.fromEntries(Object.entries(samples).map(([name, xs]) => [name, summarize(xs)]));
}

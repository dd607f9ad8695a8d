/**
 * Scenario 5: does attach stay as fast when the database holds 10,000 tasks instead of 100?
 * Each phase gets its own repository and its own ready tasks (the same shape: same number of
 * worktrees, same sessions per task), then the database is grown in bulk to the phase's size
 * and attach launches are timed. The plans of the attach path's statements are read at the
 * large size.
 */
import type { BenchContext } from '../context';
import { explainAttachPath, tableSizes, type ExplainedStatement } from '../explain';
import { growTasksTo } from '../seed';
import { ratio, round, summarize, type LatencySummary } from '../stats';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

export interface GrowthPhase {
  tasksInDatabase: number;
  seededTasks: number;
  attach: LatencySummary;
  failures: number;
  samplesMs: number[];
}

export interface GrowthResult {
  small: GrowthPhase;
  large: GrowthPhase;
  ratioP50: number;
  tableSizes: Record<string, number>;
  plans: ExplainedStatement[];
}

async function phase(ctx: BenchContext, name: string, totalTasks: number): Promise<{ result: GrowthPhase; tasks: string[] }> {
  const { api, config } = ctx;
  const repo = await makeRepo(api, ctx.reposDir, `growth-${name}`, config.repoFiles);
  const tasks = await createTasks(api, config.growth.readyTasks, [repo], `growth ${name}`);
  await materializeTasks(api, tasks);
  for (const t of tasks) await api.launchOk(t, 'attached'); // warm-up, one session per task
  const seededTasks = await growTasksTo(ctx.pool, totalTasks, ctx.catalogRepos, ctx.services.workspaceRoot);
  const tasksInDatabase = Number((await ctx.pool.query<{ n: string }>('SELECT count(*) AS n FROM tasks')).rows[0]!.n);
  ctx.log(`growth ${name}: ${tasksInDatabase} tasks in the database (${seededTasks} seeded)`);

  const samples: number[] = [];
  let failures = 0;
  for (let i = 0; i < config.growth.samples; i++) {
    const res = await api.launch(tasks[i % tasks.length]!);
    if (res.status === 201) samples.push(res.ms);
    else failures++;
  }
  await killAgents(ctx.pool);
  return { result: { tasksInDatabase, seededTasks, attach: summarize(samples), failures, samplesMs: samples.map((x) => round(x, 1)) }, tasks };
}

export async function runGrowth(ctx: BenchContext): Promise<GrowthResult> {
  const small = await phase(ctx, 'small', ctx.config.growth.smallTasks);
  const large = await phase(ctx, 'large', ctx.config.growth.largeTasks);
  return {
    small: small.result,
    large: large.result,
    ratioP50: ratio(large.result.attach.p50, small.result.attach.p50),
    tableSizes: await tableSizes(ctx.pool),
    plans: await explainAttachPath(ctx.pool, large.tasks[0]!, ctx.services.workspaceRoot),
  };
}

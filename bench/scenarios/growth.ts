/**
 * Scenario 5: does attach stay as fast when the database holds 100,000 tasks (and 1,000,000
 * sessions rows) instead of 100?
 * Each phase gets its own repository and its own ready tasks (the same shape: same number of
 * worktrees, same sessions per task), then the database is grown in bulk to the phase's size
 * and attach launches are timed, then a list page (`GET /v1/tasks`, 50 tasks behind a cursor:
 * the keyset must not cost more deep in a large table). The plans of the attach path's
 * statements, and the list page's, are read at the large size.
 */
import type { BenchContext } from '../context';
import { explainAttachPath, explainListPage, tableSizes, type ExplainedStatement } from '../explain';
import { growTasksTo } from '../seed';
import { ratio, round, summarize, type LatencySummary } from '../stats';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

interface GrowthPhase {
  tasksInDatabase: number;
  seededTasks: number;
  /** Rows in sessions after seeding. */
  sessionsInDatabase: number;
  /** Seconds the bulk seeding took (statements, commit and ANALYZE). */
  seedSeconds: number;
  attach: LatencySummary;
  failures: number;
  samplesMs: number[];
  /** GET /v1/tasks?limit=50 with the cursor of the first page: the second page, read again and again. */
  listPage: LatencySummary;
}

export interface GrowthResult {
  small: GrowthPhase;
  large: GrowthPhase;
  ratioP50: number;
  listPageRatioP50: number;
  tableSizes: Record<string, number>;
  plans: ExplainedStatement[];
  /** The list page's statements at the large size. */
  listPlans: ExplainedStatement[];
}

async function phase(
  ctx: BenchContext,
  name: string,
  totalTasks: number,
): Promise<{ result: GrowthPhase; tasks: string[] }> {
  const { api, config } = ctx;
  const repo = await makeRepo(api, ctx.reposDir, `growth-${name}`, config.repoFiles);
  const tasks = await createTasks(api, config.growth.readyTasks, [repo], `growth ${name}`);
  await materializeTasks(api, tasks);
  for (const t of tasks) await api.launchOk(t, 'attached'); // warm-up, one session per task
  const seedStart = performance.now();
  const seededTasks = await growTasksTo(
    ctx.pool,
    totalTasks,
    ctx.catalogRepos,
    ctx.services.workspaceRoot,
    config.growth.sessionsPerTask,
  );
  const seedSeconds = round((performance.now() - seedStart) / 1000, 1);
  const tasksInDatabase = Number((await ctx.pool.query<{ n: string }>('SELECT count(*) AS n FROM tasks')).rows[0]!.n);
  const sessionsInDatabase = Number(
    (await ctx.pool.query<{ n: string }>('SELECT count(*) AS n FROM sessions')).rows[0]!.n,
  );
  ctx.log(
    `growth ${name}: ${tasksInDatabase} tasks, ${sessionsInDatabase} sessions in the database (${seededTasks} tasks seeded in ${seedSeconds} s)`,
  );

  const samples: number[] = [];
  let failures = 0;
  for (let i = 0; i < config.growth.samples; i++) {
    const res = await api.launch(tasks[i % tasks.length]!);
    if (res.status === 201) samples.push(res.ms);
    else failures++;
  }
  await killAgents(ctx.pool);
  return {
    result: {
      tasksInDatabase,
      seededTasks,
      sessionsInDatabase,
      seedSeconds,
      attach: summarize(samples),
      failures,
      samplesMs: samples.map((x) => round(x, 1)),
      listPage: await listPageLatency(ctx),
    },
    tasks,
  };
}

async function listPageLatency(ctx: BenchContext): Promise<LatencySummary> {
  const first = await ctx.api.call<{ items: unknown[]; nextCursor: string | null }>('GET', '/v1/tasks?limit=50');
  if (first.status !== 200 || !first.body.nextCursor)
    throw new Error(`listing tasks: ${first.status} ${JSON.stringify(first.body)}`);
  const samples: number[] = [];
  for (let i = 0; i < ctx.config.growth.samples; i++) {
    const res = await ctx.api.call<{ items: unknown[] }>('GET', `/v1/tasks?limit=50&cursor=${first.body.nextCursor}`);
    if (res.status !== 200 || res.body.items.length !== 50)
      throw new Error(`listing tasks: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    samples.push(res.ms);
  }
  return summarize(samples);
}

export async function runGrowth(ctx: BenchContext): Promise<GrowthResult> {
  const small = await phase(ctx, 'small', ctx.config.growth.smallTasks);
  const large = await phase(ctx, 'large', ctx.config.growth.largeTasks);
  return {
    small: small.result,
    large: large.result,
    ratioP50: ratio(large.result.attach.p50, small.result.attach.p50),
    listPageRatioP50: ratio(large.result.listPage.p50, small.result.listPage.p50),
    tableSizes: await tableSizes(ctx.pool),
    plans: await explainAttachPath(ctx.pool, large.tasks[0]!, ctx.services.workspaceRoot),
    listPlans: await explainListPage(ctx.pool),
  };
}

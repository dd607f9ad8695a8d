/**
 * Resume: sequential resumes of sessions whose environment is ready, each stopping the
 * session's running agent and starting a new one. Product (HTTP → the resume workflow) against
 * the bare floor (admitResume, the same validation, the stop of the previous agent, the spawn, in
 * one transaction) and the engine floor (a workflow of the resume's shape with no work), the
 * three interleaved in alternating blocks.
 */
import { resumeWorkflowId } from '../../domain/workflow-ids';
import { errorCode } from '../api';
import type { BenchContext } from '../context';
import { shapeOfWorkflow } from '../engine-floor';
import { profileWorkflow, serviceRoles, type HistoryProfile } from '../history';
import type { LaunchComparison } from '../stats';
import { compared, interleaved } from '../interleave';
import { createTasks, killAgents, makeRepo, materializeTasks } from '../world';

export interface ResumeResult extends LaunchComparison {
  sessions: number;
  profile: HistoryProfile | null;
}

export async function runResume(ctx: BenchContext): Promise<ResumeResult> {
  const { api, floor, config } = ctx;
  const { samples, block, warmup, tasks: taskCount } = config.resume;
  const repo = await makeRepo(api, ctx.reposDir, 'resume', config.repoFiles);
  const tasks = await createTasks(api, taskCount, [repo], 'resume');
  await materializeTasks(api, tasks);
  // Each task gets one session the product resumes and one the floor resumes, each with a running agent.
  const productSessions: string[] = [];
  const floorSessions: string[] = [];
  for (const t of tasks) {
    productSessions.push((await api.launchOk(t, 'attached')).sessionId);
    floorSessions.push((await api.launchOk(t, 'attached')).sessionId);
  }
  let pTurn = 0;
  let fTurn = 0;
  const resumeProduct = () => {
    const sessionId = productSessions[pTurn++ % productSessions.length]!;
    return api.call<{ id: string }>('POST', `/v1/sessions/${sessionId}/resume`, {}).then((res) => ({ res, sessionId }));
  };
  const runOf = async (sessionId: string) =>
    resumeWorkflowId(
      sessionId,
      (await ctx.pool.query<{ admitted_run: string }>('SELECT admitted_run FROM sessions WHERE id = $1', [sessionId]))
        .rows[0]!.admitted_run,
    );

  let lastSession = '';
  for (let i = 0; i < warmup; i++) {
    const { res, sessionId } = await resumeProduct();
    if (res.status !== 200) throw new Error(`resume warm-up: ${res.status} ${JSON.stringify(res.body)}`);
    lastSession = sessionId;
    await floor.resume(floorSessions[fTurn++ % floorSessions.length]!);
  }
  const shape = await shapeOfWorkflow(ctx.temporal, await runOf(lastSession));

  const samplesOf = await interleaved(
    ctx,
    { samples, block, label: 'resume' },
    {
      product: async () => {
        const { res, sessionId } = await resumeProduct();
        return res.status === 200 ? { ms: res.ms, sessionId } : { failure: errorCode(res) };
      },
      floor: () => floor.resume(floorSessions[fTurn++ % floorSessions.length]!),
      engine: () => ctx.engine.time(shape),
    },
  );
  const { nearest, report } = compared(samplesOf, shape);
  // The last resume of the session nearest the median is the one whose history is still its admitted run.
  const profile = nearest
    ? await profileWorkflow(ctx.temporal, await runOf(nearest.sessionId), null, serviceRoles(ctx.services))
    : null;
  await killAgents(ctx.pool);
  return {
    sessions: productSessions.length,
    ...report,
    profile,
  };
}

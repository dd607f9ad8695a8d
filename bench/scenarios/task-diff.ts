/**
 * A task's diff of 1,000 changed files: `GET /v1/tasks/:id/diff` (the file list: statuses and
 * line counts, committed and uncommitted) against its floor, a plain `git diff --numstat` of the
 * same merge base and head plus one API round trip (`GET /healthz`). The agent of the task changes
 * every file of a 1,000-file repository and commits; its worktree is then clean, so the product
 * also reads the worktree's status and untracked files (none) on top of the floor's one command.
 * Product and floor samples alternate in blocks.
 */
import { agentEndedCleanly } from '../agent-ended';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { BenchContext } from '../context';
import { elapsedMs, ratio, summarize, type LatencySummary } from '../stats';
import { makeRepo } from '../world';

const execFileAsync = promisify(execFile);

const FILES = 1000;
const BLOCK = 5;

export interface TaskDiffResult {
  files: number;
  product: LatencySummary;
  /** `git diff --numstat <mergeBase> <head>` in the repository, a plain process. */
  gitNumstat: LatencySummary;
  /** `GET /healthz`: what any answer of the API costs. */
  roundTrip: LatencySummary;
  /** Product p50 / (numstat p50 + round trip p50). */
  ratioP50: number;
}

const CHANGE_AND_COMMIT = [
  'sh',
  '-c',
  `find src -name '*.ts' -exec sh -c 'for f; do echo "// changed" >> "$f"; done' _ {} + &&
   git -c user.name=bench -c user.email=bench@example.com commit -q -am 'change every file'`,
];

export async function runTaskDiff(ctx: BenchContext): Promise<TaskDiffResult> {
  const { api } = ctx;
  const samples = ctx.config.quick ? 10 : 40;
  const repo = await makeRepo(api, ctx.reposDir, 'diff', FILES);
  const taskId = await api.createTask('diff', [repo.id]);
  const launched = await api.call<{ sessionId: string }>('POST', `/v1/tasks/${taskId}/sessions`, {
    executorType: 'worktree',
    agentProfile: 'shell',
    command: CHANGE_AND_COMMIT,
  });
  if (launched.status !== 201) throw new Error(`diff launch: ${launched.status} ${JSON.stringify(launched.body)}`);
  await agentEndedCleanly(ctx, launched.body.sessionId, "the diff's agent");

  const diffUrl = `/v1/tasks/${taskId}/diff`;
  const first = await api.call<{
    repositories: { mergeBase: string; head: string; files: unknown[]; truncated: boolean }[];
  }>('GET', diffUrl);
  const d = first.body.repositories?.[0];
  if (first.status !== 200 || !d || d.files.length !== FILES || d.truncated)
    throw new Error(`the diff is not of ${FILES} files: ${first.status} ${JSON.stringify(first.body).slice(0, 300)}`);

  const product: number[] = [];
  const numstat: number[] = [];
  const roundTrip: number[] = [];
  while (product.length < samples) {
    for (let i = 0; i < BLOCK; i++) {
      const res = await api.call('GET', diffUrl);
      if (res.status !== 200) throw new Error(`diff: ${res.status}`);
      product.push(res.ms);
    }
    for (let i = 0; i < BLOCK; i++) {
      const start = performance.now();
      await execFileAsync('git', ['diff', '--numstat', d.mergeBase, d.head], {
        cwd: repo.path,
        maxBuffer: 16 * 1024 * 1024,
      });
      numstat.push(elapsedMs(start));
      roundTrip.push((await api.call('GET', '/healthz')).ms);
    }
  }
  const result = {
    files: d.files.length,
    product: summarize(product),
    gitNumstat: summarize(numstat),
    roundTrip: summarize(roundTrip),
  };
  return {
    ...result,
    ratioP50: ratio(result.product.p50, result.gitNumstat.p50 + result.roundTrip.p50),
  };
}

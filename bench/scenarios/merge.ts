/**
 * Merging a task (`POST /v1/tasks/:id/merge`, `Prefer: wait`) [R8.3].
 *
 * 19, one merge: a task of one repository whose branch holds 20 commits (each changes one source
 * file and adds one), merged into `main`, which its source checkout has checked out, as a
 * developer's would. Its floor: the same git steps run by hand on an identical repository, its
 * task branch made in a worktree the same way (`git merge-tree --write-tree main task`,
 * `git commit-tree <tree> -p main [-p task] -m msg`, `git update-ref refs/heads/main <new> <old>`,
 * and `git read-tree -m -u <old> <new>` in the checkout, which the product's merge also brings
 * forward), plus the engine floor of a workflow with one activity (polled, as the merge's is
 * started) on the same dev server. Each measured merge has a fresh task, prepared (launched,
 * its agent ended, its 20 commits made) before its block; product, git floor and engine floor
 * samples alternate in blocks.
 *
 * 20, merges at once: 20 tasks of one repository, each changing a file of its own, merged at once
 * into one base, against 20 such merges one after another in the same run (rounds alternate which
 * goes first). Every task's file must be in `main` afterwards; a round where one did not land is
 * reported as failed, not timed.
 */
import { agentEndedCleanly } from '../agent-ended';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { mergeWorkflowId } from '../../domain/workflow-ids';
import { errorCode, type ApiResponse } from '../api';
import type { BenchContext } from '../context';
import { shapeOfWorkflow } from '../engine-floor';
import { profileWorkflow, serviceRoles, type HistoryProfile } from '../history';
import { mapLimit } from '../processes';
import { elapsedMs, indexNearest, median, ratio, round, summarize, type LatencySummary } from '../stats';
import type { WorkflowShape } from '../workflow-shape';
import { gitAsync, makeRepo, makeRepoOnDisk, type Repo } from '../world';

const execFileAsync = promisify(execFile);

const COMMITS = 20;
const BLOCK = 5;
const AT_ONCE = 20;
type Strategy = 'squash' | 'merge';

/** Temporal's least cost of a workflow with one activity, polled (the merge's caller starts it so). */
const ONE_ACTIVITY: WorkflowShape = {
  eager: false,
  updateWithStart: false,
  steps: [{ kind: 'activities', count: 1 }],
  counts: { localActivities: 0, activities: 1, updates: 0, children: 0, workflowTasks: 2 },
};

interface MergeStrategyResult {
  strategy: Strategy;
  product: LatencySummary;
  /** The four git commands by hand, as plain processes, on an identical repository. */
  git: LatencySummary;
  /** Each of the four commands' p50. */
  gitParts: Record<string, number>;
  /** A workflow with one activity and no work. */
  engine: LatencySummary;
  /** The merge's own shape replayed with no work (read from one of its histories): beside, not judged. */
  engineProductShape: LatencySummary;
  productShape: WorkflowShape;
  /** `GET /healthz`: what any answer of the API costs (beside, not added). */
  roundTrip: LatencySummary;
  /** product p50 / (git p50 + engine p50): what the target judges. */
  ratioToFloorsP50: number;
  /** The history of the merge nearest the p50: its workflow tasks, activities and their times. */
  profile: HistoryProfile;
}

export interface MergeResult {
  files: number;
  commits: number;
  strategies: MergeStrategyResult[];
}

interface MergesAtOnceRound {
  atOnceMs: number;
  sequentialMs: number;
  first: 'at_once' | 'sequential';
}

export interface MergesAtOnceResult {
  merges: number;
  files: number;
  rounds: MergesAtOnceRound[];
  /** Merges that did not answer 200 `merged`, or whose file is not in `main` afterwards, in any round. */
  failures: number;
  failureCodes: Record<string, number>;
  /** Each merge's own latency when all started together. */
  atOnceLatency: LatencySummary;
  sequentialLatency: LatencySummary;
  atOnceMedianMs: number;
  sequentialMedianMs: number;
  /** At-once wall / sequential wall (medians over rounds); null when a merge failed. */
  wallRatio: number | null;
}

/** POST /v1/tasks/:id/merge, waiting for the outcome. */
function mergeRequest(ctx: BenchContext, taskId: string, strategy: Strategy): Promise<ApiResponse> {
  return ctx.api.call('POST', `/v1/tasks/${taskId}/merge`, { strategy }, { prefer: 'wait' });
}

/**
 * The task's work, as its agent makes it: `sh -c WORK _ <label> <file>...` commits once per
 * file, appending a line to that file and adding `work/<label>/c<k>.txt`. The floor's task
 * branch gets the same commits by the same script.
 */
const WORK = `set -e; label=$1; shift; mkdir -p "work/$label"; k=0
for f in "$@"; do
  echo "// $label commit $k" >> "$f"; echo "$label $k" > "work/$label/c$k.txt"
  git add -- "$f" "work/$label/c$k.txt"
  git -c user.name=bench -c user.email=bench@example.com commit -q -m "$label: commit $k"
  k=$((k + 1))
done`;

/** Sample `sample`'s commits change `count` existing source files, a different one each (and each sample's others). */
function workArgs(files: number, label: string, sample: number, count: number): string[] {
  const changed = Array.from({ length: count }, (_, k) => {
    const i = (sample * count + k) % files;
    return `src/pkg${i % 20}/mod${i % 7}/file${i}.ts`;
  });
  return [label, ...changed];
}
const lastAdded = (label: string, count: number) => `work/${label}/c${count - 1}.txt`;

/** A task of `repo` whose agent makes its commits and ends (its end recorded, its objects home): ready to merge. */
async function taskWithWork(ctx: BenchContext, repo: Repo, title: string, args: string[]): Promise<string> {
  const taskId = await ctx.api.createTask(title, [repo.id]);
  const launched = await ctx.api.call<{ sessionId: string }>('POST', `/v1/tasks/${taskId}/sessions`, {
    executorType: 'worktree',
    agentProfile: 'shell',
    command: ['sh', '-c', WORK, 'work', ...args],
  });
  if (launched.status !== 201) throw new Error(`merge launch: ${launched.status} ${JSON.stringify(launched.body)}`);
  await agentEndedCleanly(ctx, launched.body.sessionId, "a merge task's agent");
  return taskId;
}

/** Whether `main` holds the file (its tree, not the checkout). */
async function mainHolds(repoPath: string, file: string): Promise<boolean> {
  return gitAsync(repoPath, 'cat-file', '-e', `main:${file}`).then(
    () => true,
    () => false,
  );
}

async function timedGit(dir: string, args: string[]): Promise<{ out: string; ms: number }> {
  const start = performance.now();
  const { stdout } = await execFileAsync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'bench',
      GIT_AUTHOR_EMAIL: 'bench@example.com',
      GIT_COMMITTER_NAME: 'bench',
      GIT_COMMITTER_EMAIL: 'bench@example.com',
    },
  });
  return { out: stdout.trim(), ms: elapsedMs(start) };
}

/** The merge by hand: the four commands, timed together and each. */
async function floorMerge(repoPath: string, branch: string, strategy: Strategy): Promise<Record<string, number>> {
  const old = await gitAsync(repoPath, 'rev-parse', 'refs/heads/main');
  const tree = await timedGit(repoPath, ['merge-tree', '--write-tree', 'main', branch]);
  const parents = strategy === 'merge' ? ['-p', 'main', '-p', branch] : ['-p', 'main'];
  const commit = await timedGit(repoPath, [
    'commit-tree',
    tree.out.split('\n')[0]!,
    ...parents,
    '-m',
    `merge ${branch}`,
  ]);
  const update = await timedGit(repoPath, ['update-ref', 'refs/heads/main', commit.out, old]);
  const readTree = await timedGit(repoPath, ['read-tree', '-m', '-u', old, commit.out]);
  return {
    'merge-tree': tree.ms,
    'commit-tree': commit.ms,
    'update-ref': update.ms,
    'read-tree': readTree.ms,
    total: tree.ms + commit.ms + update.ms + readTree.ms,
  };
}

export async function runMerge(ctx: BenchContext): Promise<MergeResult> {
  const files = ctx.config.repoFiles;
  const samples = ctx.config.quick ? BLOCK : 4 * BLOCK;
  const repo = await makeRepo(ctx.api, ctx.reposDir, 'merge', files);
  const floorRepo = makeRepoOnDisk(ctx.reposDir, 'merge-floor', files);
  const floorWorktrees = path.join(ctx.floorRoot, 'merge-floor');
  let sample = 0;

  /** A block's tasks, each with its 20 commits, made before any of the block is measured. */
  const productTasks = (n: number) =>
    mapLimit(
      Array.from({ length: n }, () => sample++),
      2,
      async (s) => ({
        taskId: await taskWithWork(ctx, repo, `merge ${s}`, workArgs(files, `p${s}`, s, COMMITS)),
        file: lastAdded(`p${s}`, COMMITS),
      }),
    );
  const floorBranches = (n: number) =>
    mapLimit(
      Array.from({ length: n }, () => sample++),
      1, // one at a time: concurrent `git worktree add`s in one repository race on its admin files
      async (s) => {
        const branch = `task-${s}`;
        const dir = path.join(floorWorktrees, branch);
        await gitAsync(floorRepo, 'worktree', 'add', '-q', '-b', branch, dir, 'main');
        await execFileAsync('sh', ['-c', WORK, 'work', ...workArgs(files, `f${s}`, s, COMMITS)], { cwd: dir });
        return branch;
      },
    );
  const productMerge = async (task: { taskId: string; file: string }, strategy: Strategy): Promise<number> => {
    const res = await mergeRequest(ctx, task.taskId, strategy);
    const body = res.body as { state?: string; repositories?: { after: string }[]; operationId?: string };
    if (res.status !== 200 || body.state !== 'merged')
      throw new Error(`merge of ${task.taskId}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    const main = await gitAsync(repo.path, 'rev-parse', 'refs/heads/main');
    if (body.repositories?.[0]?.after !== main || !(await mainHolds(repo.path, task.file)))
      throw new Error(`merge of ${task.taskId} answered merged, but main does not hold its work`);
    lastOperation = { taskId: task.taskId, operationId: body.operationId! };
    workflowIds.push(mergeWorkflowId(task.taskId, body.operationId!));
    return res.ms;
  };
  let lastOperation: { taskId: string; operationId: string } | null = null;
  let workflowIds: string[] = [];

  const results: MergeStrategyResult[] = [];
  for (const strategy of ['squash', 'merge'] as Strategy[]) {
    // Warm-up: a block of two of each, not measured; the merge's own shape read from the last.
    for (const task of await productTasks(2)) await productMerge(task, strategy);
    for (const branch of await floorBranches(2)) await floorMerge(floorRepo, branch, strategy);
    const productShape = await shapeOfWorkflow(
      ctx.temporal,
      mergeWorkflowId(lastOperation!.taskId, lastOperation!.operationId),
    );
    for (let i = 0; i < 2; i++) await ctx.engine.time(ONE_ACTIVITY);

    const product: number[] = [];
    workflowIds = [];
    const gitRuns: Record<string, number>[] = [];
    const engine: number[] = [];
    const engineProductShape: number[] = [];
    const roundTrip: number[] = [];
    while (product.length < samples) {
      const tasks = await productTasks(BLOCK);
      const branches = await floorBranches(BLOCK);
      for (const task of tasks) product.push(await productMerge(task, strategy));
      for (const branch of branches) gitRuns.push(await floorMerge(floorRepo, branch, strategy));
      for (let i = 0; i < BLOCK; i++) {
        engine.push(await ctx.engine.time(ONE_ACTIVITY));
        engineProductShape.push(await ctx.engine.time(productShape));
        roundTrip.push((await ctx.api.call('GET', '/healthz')).ms);
      }
    }
    const git = summarize(gitRuns.map((r) => r.total!));
    const engineSummary = summarize(engine);
    const nearest = indexNearest(product, median(product));
    const profile = await profileWorkflow(
      ctx.temporal,
      workflowIds[nearest]!,
      product[nearest]!,
      serviceRoles(ctx.services),
    );
    results.push({
      strategy,
      product: summarize(product),
      git,
      gitParts: Object.fromEntries(
        ['merge-tree', 'commit-tree', 'update-ref', 'read-tree'].map((k) => [
          k,
          round(median(gitRuns.map((r) => r[k]!))),
        ]),
      ),
      engine: engineSummary,
      engineProductShape: summarize(engineProductShape),
      productShape,
      roundTrip: summarize(roundTrip),
      ratioToFloorsP50: ratio(summarize(product).p50, git.p50 + engineSummary.p50),
      profile,
    });
  }
  return { files, commits: COMMITS, strategies: results };
}

export async function runMergesAtOnce(ctx: BenchContext): Promise<MergesAtOnceResult> {
  const files = ctx.config.repoFiles;
  const rounds = ctx.config.quick ? 1 : 3;
  const repo = await makeRepo(ctx.api, ctx.reposDir, 'merges-at-once', files);
  const failureCodes: Record<string, number> = {};
  const failed = (code: string) => (failureCodes[code] = (failureCodes[code] ?? 0) + 1);
  const atOnceLatency: number[] = [];
  const sequentialLatency: number[] = [];
  const measured: MergesAtOnceRound[] = [];

  /** 20 tasks, each with one commit adding a file of its own; all branched from `main` as it is now. */
  const prepare = (label: string) =>
    mapLimit(
      Array.from({ length: AT_ONCE }, (_, i) => i),
      3,
      async (i) => {
        // One commit adding two files of its own: `work-<label>-<i>.txt` and `work/<label>-<i>/c0.txt`.
        const own = `${label}-${i}`;
        const taskId = await taskWithWork(ctx, repo, `${label} ${i}`, [own, `work-${own}.txt`]);
        return { taskId, file: lastAdded(own, 1) };
      },
    );
  /** Each merge's answer checked, then each task's file looked for in `main`: how many did not land. */
  const landed = async (tasks: { taskId: string; file: string }[], answers: ApiResponse[]): Promise<number> => {
    let missing = 0;
    for (const [i, res] of answers.entries()) {
      const state = (res.body as { state?: string } | null)?.state;
      if (res.status !== 200 || state !== 'merged') failed(res.status === 200 ? `state_${state}` : errorCode(res));
      else if (!(await mainHolds(repo.path, tasks[i]!.file))) failed('file_not_in_main');
      else continue;
      missing++;
    }
    return missing;
  };

  // Warm-up: one merge not measured (the repository's first).
  const [warm] = await prepare('warm').then((t) => t.slice(0, 1));
  await mergeRequest(ctx, warm!.taskId, 'squash');

  let failures = 0;
  for (let r = 0; r < rounds; r++) {
    const atOnceTasks = await prepare(`r${r}-at-once`);
    const sequentialTasks = await prepare(`r${r}-sequential`);
    const atOnce = async () => {
      const start = performance.now();
      const answers = await Promise.all(atOnceTasks.map((t) => mergeRequest(ctx, t.taskId, 'squash')));
      const wall = elapsedMs(start);
      atOnceLatency.push(...answers.filter((a) => a.status === 200).map((a) => a.ms));
      return { wall, missing: await landed(atOnceTasks, answers) };
    };
    const sequential = async () => {
      const start = performance.now();
      const answers: ApiResponse[] = [];
      for (const t of sequentialTasks) answers.push(await mergeRequest(ctx, t.taskId, 'squash'));
      const wall = elapsedMs(start);
      sequentialLatency.push(...answers.filter((a) => a.status === 200).map((a) => a.ms));
      return { wall, missing: await landed(sequentialTasks, answers) };
    };
    const first = r % 2 === 0 ? 'at_once' : 'sequential';
    const a = first === 'at_once' ? await atOnce() : null;
    const s = await sequential();
    const b = a ?? (await atOnce());
    failures += b.missing + s.missing;
    ctx.log(
      `merges at once, round ${r + 1}: at once ${b.wall.toFixed(0)} ms (${b.missing} did not land), sequential ${s.wall.toFixed(0)} ms (${s.missing})`,
    );
    measured.push({ atOnceMs: round(b.wall), sequentialMs: round(s.wall), first });
  }
  const atOnceMedianMs = round(median(measured.map((m) => m.atOnceMs)));
  const sequentialMedianMs = round(median(measured.map((m) => m.sequentialMs)));
  return {
    merges: AT_ONCE,
    files,
    rounds: measured,
    failures,
    failureCodes,
    atOnceLatency: summarize(atOnceLatency),
    sequentialLatency: summarize(sequentialLatency),
    atOnceMedianMs,
    sequentialMedianMs,
    wallRatio: failures > 0 ? null : ratio(atOnceMedianMs, sequentialMedianMs),
  };
}

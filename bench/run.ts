/**
 * `make bench`: starts a private copy of the system (as `make start` runs it), measures the
 * launch, cleanup, growth and memory figures against their targets and floors, and
 * writes bench/results/latest.{json,md,svg}. It is a benchmark, not a test: it reports misses.
 */
import { execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { connectClient } from '../client/launcher/temporal';
import { createPool } from '../db/pool';
import { Api } from './api';
import { loadBenchConfig } from './config';
import type { BenchContext } from './context';
import { evaluateTargets } from './evaluate';
import { measureGitLayer } from './git-layer';
import { measureTemporalFloor } from './temporal-floor';
import { startEngineFloor } from './engine-floor';
import { CpuMeter } from './cpu';
import { createFloor } from './floor';
import { MemorySampler } from './memory';
import type { BenchResults, MemoryResult, Outcome } from './model';
import { renderTable } from './report/table';
import { writeResults } from './report/write';
import { runAgentsAlive } from './scenarios/agents-alive';
import { runAttach } from './scenarios/attach';
import { runBoardDelete } from './scenarios/board-delete';
import { runCleanup } from './scenarios/cleanup';
import { runConsoleSpeed } from './scenarios/console-speed';
import { runContainerAttach } from './scenarios/container-attach';
import { runDiskMeasurement } from './scenarios/disk-measurement';
import { runSettingToggle } from './scenarios/setting-toggle';
import { runExitDetection } from './scenarios/exit-detection';
import { runGrowth } from './scenarios/growth';
import { runIdleRelease } from './scenarios/idle-release';
import { runManyTasks } from './scenarios/many-tasks';
import { runMaterialize } from './scenarios/materialize';
import { runResume } from './scenarios/resume';
import { runTaskDiff } from './scenarios/task-diff';
import { runMerge, runMergesAtOnce } from './scenarios/merge';
import { runSshAttach } from './scenarios/ssh-attach';
import { runSupervision } from './scenarios/supervision';
import { runTracing } from './scenarios/tracing';
import { startServices, type Services } from './services';
import { killAgents, makeRepo, sweepRunGroups } from './world';

const runStart = performance.now();

/** The commit measured, and whether the working tree had changes beside it. */
function gitHead(root: string): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
function gitClean(root: string): boolean {
  try {
    return (
      execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' }).trim() ===
      ''
    );
  } catch {
    return false;
  }
}
const log = (message: string) =>
  console.error(`[bench ${((performance.now() - runStart) / 1000).toFixed(1).padStart(6)} s] ${message}`);

/** BENCH_ONLY=attach,cleanup runs only those scenarios (a diagnostic aid; the others are reported as skipped). */
const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;

/** The scenario running now (the memory samples name it). */
let running = 'start-up';

async function scenario<T>(name: string, fn: () => Promise<T>): Promise<Outcome<T>> {
  if (only && ![...only].some((key) => name.includes(key)))
    return { ok: false, error: 'skipped (BENCH_ONLY)', seconds: 0 };
  running = name;
  const start = performance.now();
  log(`${name}: start`);
  try {
    const value = await fn();
    const seconds = (performance.now() - start) / 1000;
    log(`${name}: done in ${seconds.toFixed(1)} s`);
    return { ok: true, value, seconds };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    log(`${name}: FAILED: ${err instanceof Error ? err.stack : error}`);
    return { ok: false, error, seconds: (performance.now() - start) / 1000 };
  }
}

async function main(): Promise<void> {
  const root = path.resolve(__dirname, '..');
  const config = loadBenchConfig(process.env, __dirname);
  const startedAt = new Date().toISOString();
  // Read before anything runs: the code measured is the code loaded now.
  const commit = { measured: gitHead(root), clean: gitClean(root) };
  const loadAtStart = os.loadavg().map((x) => Math.round(x * 100) / 100);
  log(`starting services${config.quick ? ' (QUICK run: reduced samples)' : ''}`);
  const services: Services = await startServices(root, log);
  const pool = createPool(services.databaseUrl, 6);
  // Its own dev server, no credentials (bench/services.ts): none of the shell's TEMPORAL_* settings.
  const temporal = await connectClient(services.temporalAddress, 'default', {});
  const engine = await startEngineFloor(temporal, services.temporalAddress, 'default');
  let tornDown = false;
  const teardown = async () => {
    if (tornDown) return;
    tornDown = true;
    log('tearing down');
    await killAgents(pool, { settled: true }).catch(() => 0);
    // The control groups of this run's agents, which a supervisor killed with its agent could not
    // remove: thousands left by runs one after the other slowed every later run's launches.
    await sweepRunGroups(root, pool).catch((err: unknown) => log(`agents' control groups not swept: ${String(err)}`));
    await engine.stop().catch(() => {});
    await pool.end().catch(() => {});
    await temporal.connection.close().catch(() => {});
    await services.stop();
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void teardown().finally(() => process.exit(130));
    });
  }

  try {
    const reposDir = path.join(services.scratch, 'repos');
    const floorDataDir = path.join(services.scratch, 'floor');
    await mkdir(reposDir, { recursive: true });
    const api = new Api(services.apiBase, services.tokens.user, services.hostId);
    const sampler = new MemorySampler({ worker: services.worker.pid, gateway: services.gateway.pid }, () => running);
    sampler.start();
    const afterStartMb = { worker: sampler.current('worker'), gateway: sampler.current('gateway') };
    const ctx: BenchContext = {
      config,
      services,
      api,
      pool,
      floor: createFloor({ pool, productWorkspaceRoot: services.workspaceRoot, floorDataDir }),
      engine,
      temporal,
      reposDir,
      floorRoot: path.join(floorDataDir, 'workspaces'),
      cpu: new CpuMeter({
        worker: services.worker.pid,
        gateway: services.gateway.pid,
        temporal: services.temporalPid,
        ...(services.postgresPid ? { postgres: { tree: services.postgresPid } } : {}),
        bench: process.pid,
      }),
      catalogRepos: [
        await makeRepo(api, reposDir, 'catalog-1', 20),
        await makeRepo(api, reposDir, 'catalog-2', 20),
        await makeRepo(api, reposDir, 'catalog-3', 20),
      ],
      log,
    };
    // Scenarios 11 and 14 restart the worker, 14 the gateway too: the meters follow them.
    services.onWorkerRestart((pid) => {
      sampler.retarget('worker', pid);
      ctx.cpu?.retarget('worker', pid);
    });
    services.onGatewayRestart((pid) => {
      sampler.retarget('gateway', pid);
      ctx.cpu?.retarget('gateway', pid);
    });

    // The console first: its board is the 1,000 tasks it makes (the console reads every task of the
    // board; growth's 100,000 would make it another measure).
    const consoleSpeed = await scenario('21 console speed', () => runConsoleSpeed(ctx));
    // Growth first, so its two database sizes are measured back to back; 1–4 then run on the grown database.
    const growth = await scenario('5 growth', () => runGrowth(ctx));
    const attach = await scenario('1 attach', () => runAttach(ctx));
    const materialize = await scenario('2 materialize', () => runMaterialize(ctx));
    const resume = await scenario('7 resume', () => runResume(ctx));
    const sshAttach = await scenario('9 ssh attach', () => runSshAttach(ctx));
    sampler.openWindow();
    const manyTasks = await scenario('3 many tasks', () => runManyTasks(ctx));
    const cleanup = await scenario('4 cleanup', () => runCleanup(ctx));
    const boardDelete = await scenario('8 board delete', () => runBoardDelete(ctx));
    const window = sampler.closeWindow();
    // Supervision and agents alive: after the memory window (its launches would count in its peaks), before anything restarts a service.
    const supervision = await scenario('12 per-agent supervision', () => runSupervision(ctx));
    const agentsAlive = await scenario('13 100 agents alive', () => runAgentsAlive(ctx));
    const taskDiff = await scenario('18 diff of 1,000 changed files', () => runTaskDiff(ctx));
    const merge = await scenario('19 merge of a 1-repository task with 20 commits', () => runMerge(ctx));
    const mergesAtOnce = await scenario('20 merges at once into one base', () => runMergesAtOnce(ctx));
    // Idle release and disk measurement: both act on the whole host, so the environments of the scenarios before are parked meanwhile.
    const idleRelease = await scenario('10 idle release and restore', () => runIdleRelease(ctx));
    const diskMeasurement = await scenario('11 disk measurement and launch latency', () => runDiskMeasurement(ctx));
    // Restarts the worker and the gateway before each block, and once more at the end as they first ran.
    const tracing = await scenario('14 tracing exporting vs not loaded', () => runTracing(ctx));
    // A second host beside the first, one with agents' limits and one without, both restarted at
    // each half (TWS_AGENT_LIMITS is read at start); the first host restarted as it first ran at the end.
    const limits = await scenario('15 limits on vs off', () =>
      runSettingToggle(ctx, {
        name: 'limits',
        env: { off: { TWS_AGENT_LIMITS: 'off' }, on: { TWS_AGENT_LIMITS: 'on' } },
        sizes: config.limits,
      }),
    );
    // The same for the sandbox: bubblewrap with its network, against agents run as the service
    // (BENCH_SANDBOX_NETWORK=none|host: bubblewrap alone, a diagnostic of what the network costs).
    const sandboxNetwork = process.env.BENCH_SANDBOX_NETWORK;
    const sandbox = await scenario('16 sandbox on vs off', () =>
      runSettingToggle(ctx, {
        name: 'sandbox',
        env: {
          off: { TWS_AGENT_SANDBOX: 'none' },
          on: { TWS_AGENT_SANDBOX: 'bwrap', ...(sandboxNetwork ? { TWS_AGENT_NETWORK: sandboxNetwork } : {}) },
        },
        sizes: config.sandbox,
      }),
    );
    // Restarts the worker and the gateway with a container engine (read at start), and once more at
    // the end as they first ran; its containers are removed before.
    const containerAttach = await scenario('17 container attach', () => runContainerAttach(ctx));
    const gitLayer = await scenario('diagnostics: git layer', () => measureGitLayer(ctx.catalogRepos[0]!.path));
    const temporalFloor = await scenario('diagnostics: temporal floor', () =>
      measureTemporalFloor(temporal, services.temporalAddress, 'default'),
    );
    sampler.stop();
    // Last: it SIGKILLs the gateway (the process that started its agents).
    const exitDetection = await scenario('6 exit detection', () => runExitDetection(ctx, config.exitDetection.samples));
    const cleanupRan = cleanup.ok && cleanup.value.status === 'measured';
    const memory: MemoryResult = {
      window: cleanupRan ? 'scenarios 3, 4 and 8' : 'scenarios 3 and 8 (4 not available)',
      worker: window.worker!,
      gateway: window.gateway!,
      afterStartMb,
      runPeakMb: Object.fromEntries(
        Object.entries(sampler.runPeakKb).map(([k, kb]) => [k, Math.round(kb / 102.4) / 10]),
      ),
    };

    const tasksInDb = growth.ok ? growth.value.large.tasksInDatabase : null;
    const partial: Omit<BenchResults, 'targets'> = {
      meta: {
        startedAt,
        finishedAt: new Date().toISOString(),
        durationSeconds: Math.round((performance.now() - runStart) / 1000),
        quick: config.quick,
        loadAverage: { atStart: loadAtStart, atEnd: os.loadavg().map((x) => Math.round(x * 100) / 100) },
        machine: {
          cpus: os.cpus().length,
          cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
          memoryGb: Math.round(os.totalmem() / 2 ** 30),
          kernel: os.release(),
        },
        versions: {
          node: process.version,
          git: execFileSync('git', ['--version'], { encoding: 'utf8' }).trim(),
          postgres: services.versions.postgres,
          temporalCli: services.versions.temporalCli,
        },
        database: process.env.DATABASE_URL ? 'a fresh database on DATABASE_URL’s server' : 'embedded PostgreSQL',
        order: [
          '21 console speed (on an empty database: the board is its 1,000 tasks)',
          '5 growth (small, then large)',
          '1 attach',
          '2 materialize',
          '7 resume',
          '9 ssh attach',
          '3 many tasks',
          '4 single archives',
          '8 board delete',
          '12 per-agent supervision',
          '13 100 agents alive',
          '18 diff of 1,000 changed files',
          '19 merge of a 1-repository task with 20 commits',
          '20 merges at once into one base',
          '10 idle release and restore',
          '11 disk measurement and launch latency (restarts the worker)',
          '14 tracing exporting vs not loaded (restarts the worker and the gateway before each block)',
          '15 limits on vs off (a second host beside the first, one on and one off; both restarted at each half)',
          '16 sandbox on vs off (a second host beside the first, one on and one off; both restarted at each half)',
          '17 container attach (restarts the worker and the gateway with a container engine, and as they first ran at the end)',
          'diagnostics (git layer, Temporal with no work)',
          '6 exit detection (kills the gateway)',
        ],
        commit,
        notes: [
          ...(process.env.BENCH_GIT_TRACE === '1'
            ? [
                'DIAGNOSTIC RUN: git is traced through a wrapper script (BENCH_GIT_TRACE=1); its figures are not comparable.',
              ]
            : []),
          ...(process.env.BENCH_WORKER_PROF === '1'
            ? [
                'DIAGNOSTIC RUN: the worker runs under --cpu-prof (BENCH_WORKER_PROF=1); its figures are not comparable.',
              ]
            : []),
          ...(only ? [`PARTIAL RUN: only ${[...only].join(', ')} (BENCH_ONLY).`] : []),
          `Scenarios 1–4 run on the grown database (${tasksInDb?.toLocaleString('en') ?? '?'} tasks and more): growth runs first so its two sizes are measured back to back.`,
          `Repositories have ${config.repoFiles} source files (a checkout is real work); agents are \`sleep 600\` in their own process group, killed after each scenario.`,
          'The floor runs the product’s own statements (db/admission.ts admitLaunch, db/environments.ts publishReady, db/executions.ts, db/sessions.ts) in one transaction in this process, the same git commands as plain `git` processes, and the agent spawn of activities/agent-process.ts.',
          'Product, bare floor and engine floor samples alternate in blocks (attach and resume: 10, ssh and container attach: 6, first launch: 5 of each kind), so drift and noise hit all three.',
          'The engine floor replays the shape of one of the product’s own histories of that scenario (read after its warm-up) with activities that do nothing, on a worker in the benchmark process against the same dev server: eager where the product was eager (the client then shares the worker’s connection), update-with-start where the product’s caller waits for an update. Local activities run one after another; activities or children scheduled in one workflow task side by side.',
          'Single archives: the engine floor starts as many cleanup-shaped workflows at once as each product half archives; the throughput floor is bare seconds + engine seconds for the same number of tasks.',
          'Board delete: one board, its tasks spread over 4 repositories, deleted by an operator with discardChanges; the engine floor replays the parent’s history: its batch steps as activities that do nothing, and children where the run has any (run once, after the product; reported, not judged).',
          'Simultaneous first launches: the floor launches as many other tasks of the same repository at once from this process, as many in flight as the benchmark’s pool has connections (6), its `git worktree add`s in turn (floor first, then the product).',
          'SSH: a real OpenSSH sshd on 127.0.0.1 started by test/support/ssh-server.ts, registered through `POST /v1/ssh-targets`; the ssh floor runs the attach’s statements and the product’s remote scripts (ssh/remote-workspace.ts readRemoteWorkspace, ssh/remote-agent.ts startRemoteAgent) over the benchmark process’s one pooled connection.',
          'Container attach: the worker and the gateway restarted with TWS_CONTAINER_ENGINE on a `podman system service` socket of the benchmark process (test/support/container-engine.ts); each task’s first launch makes its environment’s container, and each attach starts its agent in it (the host’s supervisor, `nsenter` into the container, `setpriv` to the task’s uid). The container floor runs the attach’s statements, the same validation and the container’s row in one transaction, and the engine’s own way to run the same command in the same running container: `podman exec -d --user <its uid> --workdir <workspace>` as a plain process (its execution row names the container’s first process, as stopped: the exec does not give the agent’s pid). Then the agents are killed, the host’s containers removed and both services restarted as they first ran.',
          'Idle release and restore: the environments of the earlier scenarios (growth’s 100,000 seeded ones among them) are parked on another host id while 10 and 11 run, and put back after: a release judges every environment of the host (500 at most, oldest first) and the disk measurement walks every workspace it holds. Release halves go A-B-B-A, the second product half pinned while the first is released; the floor saves with `git add --all` + `git stash create` + `git update-ref` and removes with `git worktree remove --force`, and restores with `git worktree add` on the kept branch + `git diff --binary` of the save + `git apply`, per repository in order. The product restore is a whole launch (8 at once); its floor is the git work alone.',
          'Disk measurement: the worker is restarted for each phase (TWS_DISK_MEASURE_EVERY_MS is read at start): 250 ms while on (rounds back to back), a day while off (its start-up round waited for); blocks off → on → on → off, a few unmeasured attaches after each restart; then restarted as it first ran.',
          "Per-agent supervision (bench/supervision.ts, also run alone by bench/supervisor-cost.ts): agents (`sleep 60`) started through the benchmark process’s process starter, detached, as the product starts its agents, under the old node shim, the C supervisor, and beside `sh -c 'exec sleep 60'` (no wrapper left) and `sh -c 'sleep 60; exit $?'` (a shell wrapper); PSS from smaps_rollup and CPU from every thread’s schedstat ~200 ms after the start, of the supervising process alone (the agent is another process). The CPU target is judged on the raw figure, which includes the exec out of the starter; the figure above the `exec sleep` floor is beside it.",
          '100 agents alive: attach launches on 4 ready tasks until that many agents run, after a warm-up round of as many launches killed again; VmRSS of the worker and the gateway sampled every 250 ms after a settling wait, medians compared; their process starters’ RSS (the parent of the gateway’s agents) beside, not added.',
          'Tracing: the worker and the gateway restarted for each phase (the endpoint is read at start): not loaded (OTEL_EXPORTER_OTLP_ENDPOINT unset, as every other scenario runs), loaded with OTEL_TRACES_SAMPLER=always_off (nothing recorded or exported), and exporting every span over OTLP/HTTP JSON to a sink in the benchmark process that answers 200 and discards (batched every 5 s, the SDK’s default); blocks off → on → loaded → loaded → on → off …, each on the services restarted for it, followed by a few unmeasured attaches (10; quick: 5); then restarted as they first ran. Judged: exporting / not loaded.',
          'Limits: the worker and the gateway restarted for each block with TWS_AGENT_LIMITS=on or off (read at start); blocks off → on → on → off, each after a few unmeasured attaches; in each block an attach on a ready task and a first launch of a new task (one repository) alternate. Judged: on / off, each.',
          'Diff of 1,000 changed files: an agent changes every file of a 1,000-file repository and commits; `GET /v1/tasks/:id/diff` (the file list) against `git diff --numstat` of the same merge base and head as a plain process plus one `GET /healthz` round trip, in alternating blocks of 5.',
          'Merge of a task with 20 commits (squash, then merge): each measured merge has a fresh task of one repository (launched with an agent that ends at once, then 20 commits made in its worktree, each changing a source file and adding one), prepared before its block; `POST /v1/tasks/:id/merge` with `Prefer: wait` until it answers 200 `merged`. Its floor: the same git by hand on an identical repository whose task branch is made in a worktree the same way — `git merge-tree --write-tree main task`, `git commit-tree <tree> -p main [-p task]`, `git update-ref refs/heads/main <new> <old>` and `git read-tree -m -u <old> <new>` in the checkout that has `main` checked out (the product brings that checkout forward too) — plus the engine floor of a polled workflow with one activity; blocks of 5 of each. The merge’s own shape replayed with no work is reported beside.',
          '20 merges at once into one base: 20 tasks of one repository, each with a commit adding a file of its own, merged (squash) at once, against 20 other such tasks merged one after another; rounds alternate which goes first, every task’s file must be in `main` afterwards (a round where one did not land fails the row).',
          'Floor worktree removal is serialized per repository (concurrent `git worktree remove` in one repository races on its admin files), repositories in parallel: the product serializes per repository too.',
          'CPU: utime + stime of each process from /proc/<pid>/stat, with the reaped children it started (git, agents); PostgreSQL counts the postmaster and its backends.',
          'Memory: VmRSS of the worker and gateway processes sampled every 200 ms; VmHWM is reset (clear_refs 5) when the window opens, so the transient start-up peak does not count (what start-up leaves resident does).',
          'The machine is shared: the load average at start and end is in the header; other work on it slows product and floor alike, and the interleaving keeps the ratios.',
        ],
      },
      growth,
      attach,
      materialize,
      resume,
      sshAttach,
      containerAttach,
      manyTasks,
      cleanup,
      boardDelete,
      idleRelease,
      diskMeasurement,
      supervision,
      agentsAlive,
      taskDiff,
      consoleSpeed,
      merge,
      mergesAtOnce,
      tracing,
      limits,
      sandbox,
      exitDetection,
      memory,
      gitLayer,
      temporalFloor,
    };
    const results: BenchResults = { ...partial, targets: evaluateTargets(partial) };
    const files = await writeResults(config.resultsDir, results);
    log(`wrote ${files.map((f) => path.relative(root, f)).join(', ')}`);
    process.stdout.write('\n' + renderTable(results) + '\n\n');
  } finally {
    await teardown();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

/**
 * Sample sizes of `make bench`. The defaults are the targets' minimum samples; BENCH_QUICK=1 shrinks
 * everything for a smoke run while the benchmark itself is being changed.
 */
import path from 'node:path';

export interface BenchConfig {
  quick: boolean;
  /** Files in each generated repository: checkout cost is what materialization pays for. */
  repoFiles: number;
  attach: { samples: number; block: number; tasks: number; warmup: number; directSamples: number };
  materialize: { samples: number; block: number; warmup: number; directSamples: number };
  resume: { samples: number; block: number; warmup: number; tasks: number };
  ssh: { samples: number; block: number; warmup: number; tasks: number };
  /** The container executor's attaches (tasks with a running container each). */
  container: { samples: number; block: number; warmup: number; tasks: number };
  boardDelete: { tasks: number };
  manyTasks: { tasks: number };
  cleanup: { tasks: number; repositories: number; materializeConcurrency: number };
  growth: { samples: number; readyTasks: number; smallTasks: number; largeTasks: number; sessionsPerTask: number };
  exitDetection: { samples: number };
  /** Idle release and restore: tasks released and restored, over `repositories`; restores `restoreConcurrency` at once; bytes checked on `verifySample`. */
  idle: { tasks: number; repositories: number; restoreConcurrency: number; verifySample: number };
  /** Disk measurement: attach samples per phase (measurement on / off) with `workspaces` seeded worktrees of `repoFiles` files on the host. */
  disk: {
    samples: number;
    block: number;
    warmup: number;
    tasks: number;
    workspaces: number;
    repositories: number;
    repoFiles: number;
  };
  /** Per-agent supervision: agents started under each supervising process (and each floor). */
  supervision: { agents: number };
  /** Agents alive: agents kept alive at once on `tasks` ready tasks; RSS sampled for `sampleMs` after `settleMs`. */
  alive: { agents: number; tasks: number; settleMs: number; sampleMs: number };
  /** Tracing: attach samples per tracing mode (not loaded, loaded with nothing sampled, exporting). */
  tracing: { samples: number; block: number; warmup: number; tasks: number };
  /** Limits: attaches and first launches per mode, with agents' limits on and off. */
  limits: { samples: number; block: number; warmup: number; tasks: number };
  /** Sandbox: the same with agents sandboxed (bubblewrap) and not. */
  sandbox: { samples: number; block: number; warmup: number; tasks: number };
  resultsDir: string;
}

const int = (raw: string | undefined, fallback: number): number => {
  const n = Number(raw);
  return Number.isInteger(n) && n > 0 ? n : fallback;
};

export function loadBenchConfig(env: Record<string, string | undefined>, benchDir: string): BenchConfig {
  const quick = env.BENCH_QUICK === '1';
  const q = (full: number, small: number) => (quick ? small : full);
  return {
    quick,
    repoFiles: int(env.BENCH_REPO_FILES, 600),
    attach: {
      samples: int(env.BENCH_ATTACH_SAMPLES, q(200, 20)),
      block: 10,
      tasks: q(20, 4),
      warmup: q(10, 3),
      directSamples: q(30, 6),
    },
    materialize: {
      samples: int(env.BENCH_MATERIALIZE_SAMPLES, q(30, 5)),
      block: 5,
      warmup: 2,
      directSamples: q(10, 3),
    },
    resume: { samples: int(env.BENCH_RESUME_SAMPLES, q(100, 20)), block: 10, warmup: q(5, 2), tasks: q(10, 4) },
    ssh: { samples: int(env.BENCH_SSH_SAMPLES, q(60, 12)), block: 6, warmup: 3, tasks: q(6, 3) },
    container: { samples: int(env.BENCH_CONTAINER_SAMPLES, q(60, 12)), block: 6, warmup: 3, tasks: q(6, 3) },
    boardDelete: { tasks: int(env.BENCH_BOARD_TASKS, q(200, 16)) },
    manyTasks: { tasks: int(env.BENCH_MANY_TASKS, q(200, 20)) },
    cleanup: { tasks: int(env.BENCH_CLEANUP_TASKS, q(200, 16)), repositories: 4, materializeConcurrency: 8 },
    growth: {
      samples: int(env.BENCH_GROWTH_SAMPLES, q(100, 20)),
      readyTasks: q(10, 4),
      smallTasks: 100,
      largeTasks: int(env.BENCH_GROWTH_TASKS, q(100_000, 2_000)),
      sessionsPerTask: int(env.BENCH_GROWTH_SESSIONS_PER_TASK, 10),
    },
    exitDetection: { samples: int(env.BENCH_EXIT_SAMPLES, q(20, 6)) },
    idle: { tasks: int(env.BENCH_IDLE_TASKS, q(200, 16)), repositories: 4, restoreConcurrency: 8, verifySample: 10 },
    disk: {
      samples: int(env.BENCH_DISK_SAMPLES, q(60, 12)),
      block: q(15, 6),
      warmup: 3,
      tasks: q(10, 4),
      workspaces: int(env.BENCH_DISK_WORKSPACES, q(1000, 100)),
      repositories: 4,
      repoFiles: int(env.BENCH_DISK_REPO_FILES, q(200, 100)),
    },
    supervision: { agents: int(env.BENCH_SUPERVISION_AGENTS, q(50, 20)) },
    alive: { agents: int(env.BENCH_ALIVE_AGENTS, 100), tasks: 4, settleMs: q(5000, 3000), sampleMs: q(5000, 3000) },
    tracing: { samples: int(env.BENCH_TRACING_SAMPLES, q(60, 12)), block: q(15, 6), warmup: q(10, 5), tasks: q(10, 4) },
    limits: {
      samples: int(env.BENCH_LIMITS_SAMPLES, q(60, 10)),
      block: int(env.BENCH_LIMITS_BLOCK, q(5, 5)),
      warmup: q(5, 3),
      tasks: q(6, 3),
    },
    sandbox: {
      samples: int(env.BENCH_SANDBOX_SAMPLES, q(60, 10)),
      block: int(env.BENCH_SANDBOX_BLOCK, q(5, 5)),
      warmup: q(5, 3),
      tasks: q(6, 3),
    },
    resultsDir: env.BENCH_RESULTS_DIR ?? path.join(benchDir, 'results'),
  };
}

/** The shape of bench/results/latest.json. */
import type { GitLayerCost } from './git-layer';
import type { TemporalFloor } from './temporal-floor';
import type { MemoryWindowResult } from './memory';
import type { AgentsAliveResult } from './scenarios/agents-alive';
import type { TaskDiffResult } from './scenarios/task-diff';
import type { ConsoleSpeedResult } from './scenarios/console-speed';
import type { MergeResult, MergesAtOnceResult } from './scenarios/merge';
import type { AttachResult } from './scenarios/attach';
import type { BoardDeleteResult } from './scenarios/board-delete';
import type { CleanupResult } from './scenarios/cleanup';
import type { ContainerAttachResult } from './scenarios/container-attach';
import type { DiskMeasurementResult } from './scenarios/disk-measurement';
import type { ExitDetectionResult } from './scenarios/exit-detection';
import type { GrowthResult } from './scenarios/growth';
import type { IdleReleaseResult } from './scenarios/idle-release';
import type { ManyTasksResult } from './scenarios/many-tasks';
import type { MaterializeResult } from './scenarios/materialize';
import type { ResumeResult } from './scenarios/resume';
import type { SshAttachResult } from './scenarios/ssh-attach';
import type { SupervisionResult } from './scenarios/supervision';
import type { TracingResult } from './scenarios/tracing';
import type { ToggleResult } from './scenarios/setting-toggle';
import type { TargetResult } from './targets';

/** A scenario either produced its figures or failed with a message (the run goes on). */
export type Outcome<T> = { ok: true; value: T; seconds: number } | { ok: false; error: string; seconds: number };

export interface MemoryResult {
  window: string;
  worker: MemoryWindowResult;
  gateway: MemoryWindowResult;
  /** VmRSS once the services were ready, before any launch, in MB. */
  afterStartMb: Record<string, number | null>;
  /** Sampled VmRSS peak over the whole run, start-up included, in MB. */
  runPeakMb: Record<string, number>;
}

export interface BenchResults {
  meta: {
    startedAt: string;
    finishedAt: string;
    durationSeconds: number;
    quick: boolean;
    /** 1, 5 and 15 minute load averages of the machine when the run started and ended. */
    loadAverage: { atStart: number[]; atEnd: number[] };
    machine: { cpus: number; cpuModel: string; memoryGb: number; kernel: string };
    versions: { node: string; git: string; postgres: string; temporalCli: string };
    database: string;
    order: string[];
    /** The commit this run measured (absent in results written before round 4). */
    commit?: { measured: string; clean: boolean };
    notes: string[];
  };
  growth: Outcome<GrowthResult>;
  attach: Outcome<AttachResult>;
  materialize: Outcome<MaterializeResult>;
  /** Rows added in round 4 (absent in results written before it). */
  resume?: Outcome<ResumeResult>;
  sshAttach?: Outcome<SshAttachResult>;
  /** The container executor's attach (absent in results written before it existed). */
  containerAttach?: Outcome<ContainerAttachResult>;
  manyTasks: Outcome<ManyTasksResult>;
  cleanup: Outcome<CleanupResult>;
  boardDelete?: Outcome<BoardDeleteResult>;
  /** Rows added in round 5 (absent in results written before it). */
  idleRelease?: Outcome<IdleReleaseResult>;
  diskMeasurement?: Outcome<DiskMeasurementResult>;
  /** Rows added in round 6 (absent in results written before it). */
  supervision?: Outcome<SupervisionResult>;
  agentsAlive?: Outcome<AgentsAliveResult>;
  tracing?: Outcome<TracingResult>;
  /** A task's diff of 1,000 files (absent in results written before it existed). */
  taskDiff?: Outcome<TaskDiffResult>;
  /** The web console in a headless browser (absent in results written before it). */
  consoleSpeed?: Outcome<ConsoleSpeedResult>;
  /** A task's merge, and 20 at once into one base (absent in results written before they existed). */
  merge?: Outcome<MergeResult>;
  mergesAtOnce?: Outcome<MergesAtOnceResult>;
  limits?: Outcome<ToggleResult>;
  sandbox?: Outcome<ToggleResult>;
  /** Scenario 6 (absent in results written before it existed). */
  exitDetection?: Outcome<ExitDetectionResult>;
  memory: MemoryResult | null;
  /** Profiling evidence: the product's git layer against plain git, per command. */
  gitLayer: Outcome<GitLayerCost[]>;
  /** Profiling evidence: an empty workflow's round trip on this machine, the least any launch pays. */
  temporalFloor: Outcome<TemporalFloor>;
  targets: TargetResult[];
}

/**
 * Runtime configuration, read from an environment record. Pure: the caller passes
 * process.env (or a test's own record), so tests and fault injection hand in their own.
 */
import { DEFAULT_RETRY_POLICY, STEP_HEARTBEAT_TIMEOUT_MS, type RetryPolicy } from './cleanup';
import { parseProfiles, type AgentProfile } from './agent-profiles';
import { builtinProfiles } from './agent-builtins';
import { parseDiskQuota, parseMinFreeDisk, type MinFreeDisk } from './disk';
import { parseGuardEvery, parseGuardMargin } from './disk-guard';
import { parseIdleReleaseAfter, parseIdleReleaseEvery } from './idle';
import { parseLimitSettings, type LimitSettings } from './limits';
import { instanceCgroupParent, instanceIdOf } from './instance';
import { DEFAULT_GIT_IDENTITY, parseGitIdentity, type GitIdentity } from './merge';
import type { AgentNetworkPolicy, AgentSandboxMode } from './sandbox';
import {
  parseLocalExecutor,
  parseContainerSettings,
  parseNetworkPolicy,
  parseSandboxMode,
  parseUidRange,
  type ContainerSettings,
  type LocalExecutorPolicy,
  type UidRange,
} from './agent-settings';

export interface Config {
  dataDir: string;
  databaseUrl: string | null;
  temporalAddress: string;
  temporalNamespace: string;
  /** The Temporal Web UI, for the links answers carry to their run (no trailing slash). */
  /** Null: no UI known (an engine of the operator's without TWS_TEMPORAL_UI_URL); answers then carry no link. */
  temporalUiUrl: string | null;
  taskQueue: string;
  hostId: string;
  /** This instance among those of the host (domain/instance.ts): what it makes there carries it. */
  instanceId: string;
  workspaceRoot: string;
  logDir: string;
  /**
   * Where what agents' sandboxes bind lives, when not in the data folder (TWS_AGENT_ROOT; default:
   * the data folder): the default workspace root and log folder, and the agents' object stores.
   * `make start` sets it when the data folder is below a folder other users cannot search.
   */
  agentRoot: string;
  gitBinary: string;
  /** Absolute folders a registered repository must live under; empty = anywhere. */
  repositoryRoots: string[];
  agentProfiles: Record<string, AgentProfile>;
  /** The built-in `shell` profile (runs the request's argv); TWS_SHELL_PROFILE=0 turns it off. */
  shellProfile: boolean;
  /** Where agents run: in bubblewrap when it works here (`auto`), always (`bwrap`), or never (`none`). */
  agentSandbox: AgentSandboxMode;
  /** What network a sandboxed agent has: its own with user-mode egress (`egress`), none, or the host's. */
  agentNetwork: AgentNetworkPolicy;
  /** The host uids agents run as in the sandbox, one per workspace (TWS_AGENT_UIDS). */
  agentUids: UidRange;
  /** Who may run `local` agents (in the source checkout itself): operators (default), everyone, nobody. */
  localExecutor: LocalExecutorPolicy;
  /** What one agent, and one task's agents together, may use. */
  limits: LimitSettings;
  /** The container executor: its engine (null: not offered), images and network. */
  containers: ContainerSettings;
  /** How long a repository's setup may run in a new workspace before it is stopped (TWS_SETUP_TIMEOUT_MS). */
  setupTimeoutMs: number;
  apiHost: string;
  /**
   * The gateway runs the launches and resumes it starts, in its own process, through Temporal's
   * eager workflow start (TWS_GATEWAY_RUNS_LAUNCHES, default on). Only where the gateway is on the
   * machine that holds the workspaces and sees its agent processes (as under `make start`).
   */
  gatewayRunsLaunches: boolean;
  /**
   * The workflow task timeout of the launches, resumes and cleanups a gateway starts
   * (TWS_WORKFLOW_TASK_TIMEOUT_MS, 10 s): how long one whose process died mid-step (a gateway or
   * worker killed) waits before another worker runs it again from its history. Its local steps
   * run inside that task and keep it alive meanwhile.
   */
  workflowTaskTimeoutMs: number;
  apiPort: number;
  userToken: string | null;
  operatorToken: string | null;
  /** Milliseconds the agent gets between SIGTERM and SIGKILL. */
  agentStopGraceMs: number;
  /** How long the co-residency observation waits for a sibling session row mid-transition. */
  observationLockTimeoutMs: number;
  /** Cleanup attempts: waits between them and how many per round [R6.4]. */
  cleanupPolicy: RetryPolicy;
  quickChatExpiryEveryMs: number;
  quickChatIdleMs: number;
  orphanSweepEveryMs: number;
  /** How often the consistency check runs (stranded jobs and sessions, unrecorded agent starts). */
  reconcileEveryMs: number;
  /** How often a worker collects the outcome of its host's agents that ended while nobody watched (at most 10 s). */
  exitCheckEveryMs: number;
  /** An agent's log on disk at most (the newest kept). */
  agentLogMaxBytes: number;
  orphanGraceMs: number;
  /** How often a worker says its host is alive (TWS_HOST_HEARTBEAT_MS); live = seen within three of these. */
  hostHeartbeatEveryMs: number;
  /** How long a workspace idles before it is released (TWS_IDLE_RELEASE_AFTER); null: release is off [R6.9]. */
  idleReleaseAfterMs: number | null;
  /** How often each host looks for idle workspaces (TWS_IDLE_RELEASE_EVERY). */
  idleReleaseEveryMs: number;
  /** Free space a host keeps: under it a materialization is refused `host_disk_low` (TWS_MIN_FREE_DISK) [R6.11]. */
  minFreeDisk: MinFreeDisk;
  /** How often a worker measures its workspaces and its workspace root's filesystem (TWS_DISK_MEASURE_EVERY_MS). */
  diskMeasureEveryMs: number;
  /** A task's workspace at most, in bytes, where the task sets none (TWS_TASK_DISK_QUOTA, 20 GiB unset); null: no quota (`0`). */
  taskDiskQuotaBytes: number | null;
  /** How often a worker measures the workspaces whose agents run, against their quota (TWS_DISK_QUOTA_CHECK_EVERY_MS). */
  diskQuotaCheckEveryMs: number;
  /** How often a worker reads its workspace root's free space for its free-space guard (TWS_DISK_GUARD_EVERY_MS). */
  diskGuardEveryMs: number;
  /** The least the guard keeps above the minimum free space before it stops agents (TWS_DISK_GUARD_MARGIN). */
  diskGuardMarginBytes: number;
  /**
   * Where this process serves the Temporal SDK's own metrics for Prometheus (TWS_SDK_METRICS_ADDRESS,
   * worker/sdk-telemetry.ts); null: not served. The gateway's /metrics carries its own after ours.
   */
  sdkMetricsAddress: ListenAddress | null;
  /** The author and committer of the commits the product makes: merges, squashes, committed work (TWS_GIT_AUTHOR) [R8.3]. */
  gitIdentity: GitIdentity;
  /** A diff's patch is cut at this many bytes, and its file list at diffMaxFiles (TWS_DIFF_MAX_BYTES, TWS_DIFF_MAX_FILES) [R8.1]. */
  diffMaxBytes: number;
  diffMaxFiles: number;
  /** A git config file of the operator's whose credential, http and ssh settings a push takes (TWS_PUSH_GIT_CONFIG) [R8.6]; null: none. */
  pushGitConfig: string | null;
}

function parseGitAuthor(raw: string | undefined): GitIdentity {
  if (!raw) return DEFAULT_GIT_IDENTITY;
  const identity = parseGitIdentity(raw);
  if (!identity) throw new Error('TWS_GIT_AUTHOR must be "Name <email>"');
  return identity;
}

/** An IP address and a port to listen on. */
export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * `host:port` with an IP literal (`127.0.0.1:9464`, `0.0.0.0:9464`, `[::1]:9464`): the SDK's
 * exporter binds a socket address, not a name. Unset or empty: null.
 */
export function parseSdkMetricsAddress(raw: string | undefined): ListenAddress | null {
  if (!raw) return null;
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5})$/.exec(raw);
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65535)
    throw new Error('TWS_SDK_METRICS_ADDRESS must be an IP address and a port, e.g. 127.0.0.1:9464 or [::1]:9464');
  return { host: match[1] ?? match[2]!, port };
}

/** The address as a socket address (`127.0.0.1:9464`, `[::1]:9464`). */
export const socketAddressOf = (address: ListenAddress): string =>
  `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;

const HOUR_MS = 3_600_000;

/** Milliseconds within a range, or the default when unset; anything else stops start-up and says so. */
function parseMilliseconds(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (!raw) return fallback;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < min || ms > max)
    throw new Error(`${name} must be milliseconds between ${min} and ${max}`);
  return ms;
}

/** A step's heartbeat timeout: 30 s by default, at least 3 s (a step heartbeats at a quarter of it, at most every 5 s). */
function parseHeartbeatTimeout(raw: string | undefined): number {
  return parseMilliseconds('TWS_STEP_HEARTBEAT_TIMEOUT_MS', raw, STEP_HEARTBEAT_TIMEOUT_MS, 3000, 600_000);
}

function parseWaits(raw: string | undefined): number[] {
  if (!raw) return DEFAULT_RETRY_POLICY.waitsMs;
  const waits = raw.split(',').map((w) => Number(w.trim()));
  if (waits.length === 0 || waits.some((w) => !Number.isFinite(w) || w < 0))
    throw new Error('TWS_CLEANUP_RETRY_WAITS_MS must be a comma-separated list of milliseconds');
  return waits;
}

function parseSwitch(name: string, raw: string | undefined, byDefault: boolean): boolean {
  if (raw === undefined || raw === '') return byDefault;
  if (raw !== '0' && raw !== '1') throw new Error(`${name} must be 0 or 1`);
  return raw === '1';
}

/**
 * Where answers link a run in the Temporal UI: TWS_TEMPORAL_UI_URL, else the UI of the dev
 * server `make start` runs (it passes its URL; alone, a service with no TEMPORAL_ADDRESS assumes
 * the default one on TWS_TEMPORAL_UI_PORT). An engine named by TEMPORAL_ADDRESS alone has no UI we
 * know of: no link, rather than one to where nothing listens.
 */
function temporalUiUrlOf(env: Record<string, string | undefined>): string | null {
  if (env.TWS_TEMPORAL_UI_URL) return env.TWS_TEMPORAL_UI_URL.replace(/\/+$/, '');
  return env.TEMPORAL_ADDRESS ? null : `http://127.0.0.1:${env.TWS_TEMPORAL_UI_PORT || 8233}`;
}

export function loadConfig(
  env: Record<string, string | undefined>,
  defaults: { cwd: string; hostname: string; cpus?: number },
): Config {
  const dataDir = env.TWS_DATA_DIR ?? `${defaults.cwd}/.data`;
  const agentRoot = env.TWS_AGENT_ROOT || dataDir;
  const hostId = env.TWS_HOST_ID || defaults.hostname;
  const instanceId = instanceIdOf(env.TWS_INSTANCE_ID, hostId, dataDir);
  const limits = parseLimitSettings(env, defaults.cpus ?? 2);
  // Another instance's agents' groups are never this one's to judge: each has a folder of its own.
  if (!env.TWS_CGROUP_PARENT) limits.cgroupParent = instanceCgroupParent(instanceId);
  return {
    dataDir,
    agentRoot,
    databaseUrl: env.DATABASE_URL || null,
    temporalAddress: env.TEMPORAL_ADDRESS || '127.0.0.1:7233',
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    temporalUiUrl: temporalUiUrlOf(env),
    taskQueue: env.TWS_TASK_QUEUE || 'task-workspaces',
    hostId,
    instanceId,
    workspaceRoot: env.TWS_WORKSPACE_ROOT || `${agentRoot}/workspaces`,
    logDir: env.TWS_LOG_DIR || `${agentRoot}/logs`,
    gitBinary: env.TWS_GIT_BINARY || 'git',
    repositoryRoots: (env.TWS_REPOSITORY_ROOTS ?? '').split(':').filter((root) => root.length > 0),
    agentProfiles: parseProfiles(env.TWS_AGENT_PROFILES, limits.maximum, builtinProfiles(env.TWS_BUILTIN_PROFILES)),
    shellProfile: parseSwitch('TWS_SHELL_PROFILE', env.TWS_SHELL_PROFILE, true),
    agentSandbox: parseSandboxMode(env.TWS_AGENT_SANDBOX),
    agentNetwork: parseNetworkPolicy(env.TWS_AGENT_NETWORK),
    localExecutor: parseLocalExecutor(env.TWS_LOCAL_EXECUTOR),
    agentUids: parseUidRange(env.TWS_AGENT_UIDS),
    limits,
    containers: parseContainerSettings(env, dataDir),
    // Within the launch's host step (10 minutes), with the workspace's making and the agent's start.
    setupTimeoutMs: parseMilliseconds('TWS_SETUP_TIMEOUT_MS', env.TWS_SETUP_TIMEOUT_MS, 300_000, 1000, 480_000),
    apiHost: env.TWS_API_HOST || '127.0.0.1',
    gatewayRunsLaunches: parseSwitch('TWS_GATEWAY_RUNS_LAUNCHES', env.TWS_GATEWAY_RUNS_LAUNCHES, true),
    workflowTaskTimeoutMs: parseMilliseconds(
      'TWS_WORKFLOW_TASK_TIMEOUT_MS',
      env.TWS_WORKFLOW_TASK_TIMEOUT_MS,
      10_000,
      2000,
      60_000,
    ),
    apiPort: Number(env.TWS_API_PORT || 8080),
    userToken: env.TWS_USER_TOKEN || null,
    operatorToken: env.TWS_OPERATOR_TOKEN || null,
    agentStopGraceMs: Number(env.TWS_AGENT_STOP_GRACE_MS || 5000),
    observationLockTimeoutMs: Number(env.TWS_OBSERVATION_LOCK_TIMEOUT_MS || 2000),
    cleanupPolicy: {
      waitsMs: parseWaits(env.TWS_CLEANUP_RETRY_WAITS_MS),
      maxAttempts: Number(env.TWS_CLEANUP_MAX_ATTEMPTS || DEFAULT_RETRY_POLICY.maxAttempts),
      heartbeatTimeoutMs: parseHeartbeatTimeout(env.TWS_STEP_HEARTBEAT_TIMEOUT_MS),
    },
    quickChatExpiryEveryMs: Number(env.TWS_QUICK_CHAT_EXPIRY_EVERY_MS || 24 * HOUR_MS),
    quickChatIdleMs: Number(env.TWS_QUICK_CHAT_IDLE_MS || 7 * 24 * HOUR_MS),
    orphanSweepEveryMs: Number(env.TWS_ORPHAN_SWEEP_EVERY_MS || 3 * HOUR_MS),
    idleReleaseAfterMs: parseIdleReleaseAfter(env.TWS_IDLE_RELEASE_AFTER),
    idleReleaseEveryMs: parseIdleReleaseEvery(env.TWS_IDLE_RELEASE_EVERY),
    minFreeDisk: parseMinFreeDisk(env.TWS_MIN_FREE_DISK),
    diskMeasureEveryMs: Number(env.TWS_DISK_MEASURE_EVERY_MS || 10 * 60_000),
    taskDiskQuotaBytes: parseDiskQuota(env.TWS_TASK_DISK_QUOTA),
    diskQuotaCheckEveryMs: Number(env.TWS_DISK_QUOTA_CHECK_EVERY_MS || 1_000),
    diskGuardEveryMs: parseGuardEvery(env.TWS_DISK_GUARD_EVERY_MS),
    diskGuardMarginBytes: parseGuardMargin(env.TWS_DISK_GUARD_MARGIN),
    reconcileEveryMs: Number(env.TWS_RECONCILE_EVERY_MS || 60_000),
    agentLogMaxBytes: Number(env.TWS_AGENT_LOG_MAX_BYTES || 16 * 1024 * 1024),
    exitCheckEveryMs: Math.min(Number(env.TWS_EXIT_CHECK_EVERY_MS || 5_000), 10_000),
    orphanGraceMs: Number(env.TWS_ORPHAN_GRACE_MS || 24 * HOUR_MS),
    hostHeartbeatEveryMs: Number(env.TWS_HOST_HEARTBEAT_MS || 10_000),
    sdkMetricsAddress: parseSdkMetricsAddress(env.TWS_SDK_METRICS_ADDRESS),
    gitIdentity: parseGitAuthor(env.TWS_GIT_AUTHOR),
    diffMaxBytes: Number(env.TWS_DIFF_MAX_BYTES || 8 * 1024 * 1024),
    diffMaxFiles: Number(env.TWS_DIFF_MAX_FILES || 10_000),
    pushGitConfig: env.TWS_PUSH_GIT_CONFIG || null,
  };
}

/** The URL this machine reaches the API at: a wildcard listen address means its loopback. */
export function localApiUrl(host: string, port: number): string {
  if (host === '0.0.0.0') return `http://127.0.0.1:${port}`;
  if (host === '::') return `http://[::1]:${port}`;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

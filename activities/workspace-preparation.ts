/**
 * A workspace a launch just made is made ready to work in (domain/workspace-setup.ts): per
 * repository, in order, its `copyFiles` copied from the source checkout into its new worktree,
 * then its `setup` run there as its agents run (the sandbox as the workspace's uid, the task's
 * container, or on the SSH target that holds the clone, by the runner its agents start under), before the saved work of a release is restored (so the restore wins) and before any
 * agent starts. Only a materialization does this: an attach or a resume never does [R1.2]. What
 * it did is recorded for the launch's answer and the session's view; a setup that failed with
 * `setupFailure: refuse` fails the launch (`workspace_setup_failed`), which undoes what it made.
 */
import { createHash } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { preparationSettings, recordPreparation } from '../db/workspace-preparations';
import { agentSandbox } from '../executors/host/agent-sandbox';
import { copyIntoWorktree, readCopies } from '../executors/host/copy-files';
import { runSetup, setupLogPath } from '../executors/host/setup-run';
import { containerPlaceOf } from '../executors/container/agents';
import type { ActivityDeps } from '../executors/support/deps';
import type { StartAgentInput } from '../executors/agent-start';
import { runRemoteSetup, remoteSetupLogPath } from '../executors/ssh/setup';
import { loadSshTarget, typedSsh } from '../executors/ssh/workspace';
import { copyIntoRemoteClone } from '../ssh/remote-copy';
import { typedFailure } from '../executors/support/failures';
import { agentStartOf, publishedPlan, type LaunchPlan, type MaterializedSlot } from '../domain/launch';
import { setupStatusOf, type CopyOutcome, type SetupOutcome } from '../domain/workspace-setup';

/** What a preparation did: the repositories whose worktrees it wrote into, and whether a setup ran (as the agents' uid). */
export interface Prepared {
  wrote: Set<string>;
  setupRan: boolean;
}

/** Where a workspace is made ready: its copies and its setup's run, on this host or on the SSH target that holds its clones. */
interface PreparationPlace {
  copy(sourcePath: string, worktreePath: string, patterns: string[]): Promise<CopyOutcome>;
  /** The setup's outcome and log (null: it did not run, and why not is its status). */
  setup(input: StartAgentInput, repositoryId: string): Promise<{ outcome: SetupOutcome; logPath: string | null }>;
  /** A setup that ran here ran as the workspace's uid: what is written after it is given to that uid too. */
  runsAsWorkspaceUid: boolean;
  sshTargetId: string | null;
}

async function placeOf(deps: ActivityDeps, plan: LaunchPlan): Promise<PreparationPlace> {
  const timeoutMs = deps.config.setupTimeoutMs;
  if (plan.sshTargetId) {
    // On the target: the host reads its checkout's files (never through a link), the target writes them into the clone.
    const target = await loadSshTarget(deps.pool, plan.sshTargetId);
    return {
      async copy(sourcePath, worktreePath, patterns) {
        const read = await readCopies(await realpath(sourcePath), patterns);
        const written = await copyIntoRemoteClone(target, worktreePath, read.files).catch((err: unknown) =>
          Promise.reject(typedSsh(err)),
        );
        const outcome: CopyOutcome = { files: [], skipped: read.skipped };
        read.files.forEach((file, i) =>
          written[i] ? outcome.skipped.push({ path: file.path, reason: written[i]! }) : outcome.files.push(file.path),
        );
        return outcome;
      },
      async setup(input, repositoryId) {
        const logPath = remoteSetupLogPath(target, plan, repositoryId);
        const run = await runRemoteSetup(deps, target, input, logPath, timeoutMs);
        return { outcome: setupStatusOf(run.exit, run.timedOut), logPath };
      },
      runsAsWorkspaceUid: false,
      sshTargetId: target.id,
    };
  }
  const inContainer = plan.executorType === 'container';
  // Never as the service: on a host whose agents run unsandboxed (TWS_AGENT_SANDBOX=none) it does not run.
  const runs = inContainer || Boolean(await agentSandbox(deps.config.agentSandbox));
  return {
    copy: async (sourcePath, worktreePath, patterns) =>
      copyIntoWorktree(await realpath(sourcePath), await realpath(worktreePath), patterns),
    async setup(input, repositoryId) {
      if (!runs) return { outcome: setupStatusOf(null, false), logPath: null };
      const logPath = setupLogPath(deps.config.logDir, plan, repositoryId);
      const place = inContainer ? await containerPlaceOf(deps)(input) : null;
      const run = await runSetup(deps, input, logPath, timeoutMs, place);
      return { outcome: setupStatusOf(run.exit, run.timedOut), logPath };
    },
    runsAsWorkspaceUid: runs,
    sshTargetId: null,
  };
}

/**
 * A setup's execution id: the same for every run of its launch's step, so a re-run (its worker died
 * while the setup ran) finds the setup the first one started by its mark and never runs it twice.
 */
function setupExecutionId(sessionId: string, repositoryId: string): string {
  const hex = createHash('sha256').update(`setup\0${sessionId}\0${repositoryId}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export async function prepareNewWorkspace(
  deps: ActivityDeps,
  plan: LaunchPlan,
  made: MaterializedSlot[],
): Promise<Prepared> {
  const prepared: Prepared = { wrote: new Set(), setupRan: false };
  if (made.length === 0) return prepared;
  const settings = await preparationSettings(
    deps.pool,
    made.map((m) => m.repositoryId),
  );
  if (settings.size === 0) return prepared;
  const published = publishedPlan(plan, made);
  const place = await placeOf(deps, plan);
  for (const slot of plan.slots) {
    const own = settings.get(slot.repositoryId);
    const worktree = made.find((m) => m.repositoryId === slot.repositoryId);
    if (!own || !worktree) continue;
    // Paths from the workspace: a workspace of several repositories holds each in its own folder.
    const within = path.posix.relative(plan.workspacePath, worktree.worktreePath);
    const fromWorkspace = (p: string) => (within ? `${within}/${p}` : p);
    const copy: CopyOutcome = own.copyFiles.length
      ? await place.copy(slot.sourcePath, worktree.worktreePath, own.copyFiles)
      : { files: [], skipped: [] };
    const copied: CopyOutcome = {
      files: copy.files.map(fromWorkspace),
      skipped: copy.skipped.map((s) => ({ ...s, path: fromWorkspace(s.path) })),
    };
    let setup: SetupOutcome | null = null;
    let logPath: string | null = null;
    if (own.setup) {
      const input = {
        ...agentStartOf(published, own.setup, setupExecutionId(plan.sessionId, slot.repositoryId)),
        cwd: worktree.worktreePath,
      };
      ({ outcome: setup, logPath } = await place.setup(input, slot.repositoryId));
      if (logPath && place.runsAsWorkspaceUid) prepared.setupRan = true;
    }
    if (copied.files.length > 0 || (setup && setup.status !== 'not_started')) prepared.wrote.add(slot.repositoryId);
    await recordPreparation(deps.pool, {
      sessionId: plan.sessionId,
      repositoryId: slot.repositoryId,
      environmentId: plan.environmentId,
      hostId: plan.hostId,
      position: slot.position,
      copied,
      setup,
      logPath,
      sshTargetId: place.sshTargetId,
    });
    if (setup && setup.status !== 'succeeded' && own.setupFailure === 'refuse')
      throw typedFailure('workspace_setup_failed', {
        repositoryId: slot.repositoryId,
        status: setup.status,
        exitCode: setup.exitCode,
      });
  }
  return prepared;
}

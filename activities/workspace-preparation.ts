/**
 * A workspace a launch just made is made ready to work in (domain/workspace-setup.ts): per
 * repository, in order, its `copyFiles` copied from the source checkout into its new worktree,
 * then its `setup` run there as its agents run (the sandbox as the workspace's uid, or the task's
 * container), before the saved work of a release is restored (so the restore wins) and before any
 * agent starts. Only a materialization does this: an attach or a resume never does [R1.2]. What
 * it did is recorded for the launch's answer and the session's view; a setup that failed with
 * `setupFailure: refuse` fails the launch (`workspace_setup_failed`), which undoes what it made.
 */
import { randomUUID } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { preparationSettings, recordPreparation } from '../db/workspace-preparations';
import { agentSandbox } from '../executors/host/agent-sandbox';
import { copyIntoWorktree } from '../executors/host/copy-files';
import { runSetup, setupLogPath } from '../executors/host/setup-run';
import { containerPlaceOf } from '../executors/container/agents';
import type { ActivityDeps } from '../executors/support/deps';
import { typedFailure } from '../executors/support/failures';
import { agentStartOf, publishedPlan, type LaunchPlan, type MaterializedSlot } from '../domain/launch';
import { setupStatusOf, type CopyOutcome, type SetupOutcome } from '../domain/workspace-setup';

/** What a preparation did: the repositories whose worktrees it wrote into, and whether a setup ran (as the agents' uid). */
export interface Prepared {
  wrote: Set<string>;
  setupRan: boolean;
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
  for (const slot of plan.slots) {
    const own = settings.get(slot.repositoryId);
    const worktree = made.find((m) => m.repositoryId === slot.repositoryId);
    if (!own || !worktree) continue;
    // Paths from the workspace: a workspace of several repositories holds each in its own folder.
    const within = path.relative(plan.workspacePath, worktree.worktreePath);
    const fromWorkspace = (p: string) => (within ? `${within}/${p}` : p);
    // An SSH target's clone: neither copied into nor set up by this build; said per pattern, and a
    // `refuse` setup fails the launch (never a workspace taken as ready that is not).
    const remote = Boolean(plan.sshTargetId);
    const copy: CopyOutcome = remote
      ? { files: [], skipped: own.copyFiles.map((p) => ({ path: p, reason: 'remote_workspace' as const })) }
      : own.copyFiles.length
        ? await copyIntoWorktree(await realpath(slot.sourcePath), await realpath(worktree.worktreePath), own.copyFiles)
        : { files: [], skipped: [] };
    const copied: CopyOutcome = {
      files: copy.files.map(fromWorkspace),
      skipped: copy.skipped.map((s) => ({ ...s, path: fromWorkspace(s.path) })),
    };
    let setup: SetupOutcome | null = null;
    let logPath: string | null = null;
    if (own.setup) {
      const input = { ...agentStartOf(published, own.setup, randomUUID()), cwd: worktree.worktreePath };
      const inContainer = plan.executorType === 'container';
      // Never as the service: on a host whose agents run unsandboxed (TWS_AGENT_SANDBOX=none) it does not run.
      if (!remote && (inContainer || (await agentSandbox(deps.config.agentSandbox)))) {
        logPath = setupLogPath(deps.config.logDir, plan, slot.repositoryId);
        const place = inContainer ? await containerPlaceOf(deps)(input) : null;
        const run = await runSetup(deps, input, logPath, deps.config.setupTimeoutMs, place);
        setup = setupStatusOf(run.exit, run.timedOut);
        prepared.setupRan = true;
      } else setup = setupStatusOf(null, false);
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

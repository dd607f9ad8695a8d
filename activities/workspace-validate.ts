/**
 * Attach is read-only validation [R1.2]: nothing here creates, fetches, checks out, resets or
 * writes. Every check that fails refuses the launch before any agent process starts.
 */
import type { LaunchPlan, SlotPlan, ValidationProblem } from '../domain/launch';
import { checkoutIdentity, commonDir, gitAt, listWorktrees, resolveCommit } from '../git/git';
import type { ActivityDeps } from './deps';
import { typedFailure } from './failures';
import { withHeartbeat } from './heartbeat';
import { sshWorkspaceActivities } from './ssh-workspace';
import { workspaceStepsOf } from '../domain/launch-plan';
import { isRealDirectory, markerOwnedBy, readMarker, realPathOrResolved } from './workspace-fs';

export function workspaceValidateActivities(deps: ActivityDeps) {
  const { config, logger } = deps;
  const gitOptions = { binary: config.gitBinary };
  const remote = sshWorkspaceActivities(deps);

  async function worktreeSlotProblem(plan: LaunchPlan, slot: SlotPlan): Promise<ValidationProblem | null> {
    const rec = slot.recorded;
    if (!rec?.worktreeId || !rec.worktreePath || !rec.worktreeBranch) return 'identity_missing';
    // Every fact is read at once (all read-only: the git process, lstat, realpath, the marker)
    // and judged in the same order as before, so a refusal names the same first problem.
    const [realDirectory, entries, recordedReal, marker] = await Promise.all([
      isRealDirectory(rec.worktreePath),
      listWorktrees(gitAt(slot.sourcePath, gitOptions)),
      realPathOrResolved(rec.worktreePath),
      readMarker(plan.taskFolder),
    ]);
    if (!realDirectory) return 'not_a_directory';
    // The registered entry whose real path is the recorded one (the last such, as git lists them);
    // each entry's path resolved once, all at the same time, against the recorded path resolved once.
    const entryReals = await Promise.all(entries.map((e) => realPathOrResolved(e.path)));
    let entry = null;
    for (let i = 0; i < entries.length; i++) if (entryReals[i] === recordedReal) entry = entries[i]!;
    if (!entry || entry.prunable) return 'not_registered';
    if (entry.branch !== rec.worktreeBranch) return 'branch_mismatch';
    if (!markerOwnedBy(marker, plan.environmentTaskId)) return 'marker_mismatch';
    return null;
  }

  async function localSlotProblem(slot: SlotPlan): Promise<ValidationProblem | null> {
    const dir = slot.recorded?.worktreePath ?? slot.worktreePath;
    // Two git processes side by side (the directory's top level and common dir in one, the
    // source's common dir in the other), judged in the old order.
    const [realDirectory, mine, source] = await Promise.all([
      isRealDirectory(dir),
      checkoutIdentity(dir, gitOptions),
      commonDir(slot.sourcePath, gitOptions),
    ]);
    if (!realDirectory) return 'not_a_directory';
    if (!mine) return 'not_a_checkout';
    if (!source || mine.commonDir !== source) return 'repository_mismatch';
    // The registered path may now hold another repository (replaced, re-initialised): its common
    // dir is then its own, so only the identity recorded at registration tells them apart.
    if (slot.sourceRootCommit && !(await resolveCommit(gitAt(dir, gitOptions), slot.sourceRootCommit)))
      return 'repository_mismatch';
    return null;
  }

  return {
    async validateWorkspace(plan: LaunchPlan): Promise<void> {
      await withHeartbeat('validate', async () => {
        // A remote workspace is validated on its target: host git inspection does not apply.
        if (workspaceStepsOf(plan).remote) return remote.validateRemote(plan);
        // The workspace and every slot are examined at the same time (read-only), then judged in
        // order: the workspace folder first, then the slots as listed, so the refusal is the same.
        const [workspaceIsDirectory, problems] = await Promise.all([
          plan.executorType === 'worktree' ? isRealDirectory(plan.workspacePath) : Promise.resolve(true),
          Promise.all(
            plan.slots.map((slot) =>
              plan.executorType === 'local' ? localSlotProblem(slot) : worktreeSlotProblem(plan, slot),
            ),
          ),
        ]);
        if (!workspaceIsDirectory) {
          logger.warn(
            { environmentId: plan.environmentId, sessionId: plan.sessionId, problem: 'not_a_directory' },
            'workspace validation refused',
          );
          throw typedFailure('workspace_reuse_unsafe');
        }
        for (const [i, slot] of plan.slots.entries()) {
          const problem = problems[i];
          if (problem) {
            logger.warn(
              {
                environmentId: plan.environmentId,
                sessionId: plan.sessionId,
                repositoryId: slot.repositoryId,
                problem,
              },
              'workspace validation refused',
            );
            throw typedFailure('workspace_reuse_unsafe', { problem });
          }
        }
      });
    },
  };
}

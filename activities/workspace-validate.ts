/**
 * Attach is read-only validation [R1.2]: nothing here creates, fetches, checks out, resets or
 * writes. Every check that fails refuses the launch before any agent process starts.
 */
import type { LaunchPlan, SlotPlan } from '../domain/launch';
import { commonDir, gitAt, listWorktrees, showToplevel } from '../git/git';
import type { ActivityDeps } from './deps';
import { typedFailure } from './failures';
import { withHeartbeat } from './heartbeat';
import { sshWorkspaceActivities } from './ssh-workspace';
import { workspaceStepsOf } from '../domain/launch-plan';
import { isRealDirectory, readMarker, sameRealPath } from './workspace-fs';

export type ValidationProblem =
  | 'identity_missing'
  | 'not_a_directory'
  | 'not_registered'
  | 'branch_mismatch'
  | 'marker_mismatch'
  | 'not_a_checkout'
  | 'repository_mismatch';

export function workspaceValidateActivities(deps: ActivityDeps) {
  const { config, logger } = deps;
  const gitOptions = { binary: config.gitBinary };
  const remote = sshWorkspaceActivities(deps);

  async function worktreeSlotProblem(plan: LaunchPlan, slot: SlotPlan): Promise<ValidationProblem | null> {
    const rec = slot.recorded;
    if (!rec?.worktreeId || !rec.worktreePath || !rec.worktreeBranch) return 'identity_missing';
    if (!(await isRealDirectory(rec.worktreePath))) return 'not_a_directory';
    const entries = await listWorktrees(gitAt(slot.sourcePath, gitOptions));
    let entry = null;
    for (const e of entries) if (await sameRealPath(e.path, rec.worktreePath)) entry = e;
    if (!entry || entry.prunable) return 'not_registered';
    if (entry.branch !== rec.worktreeBranch) return 'branch_mismatch';
    const marker = await readMarker(plan.taskFolder);
    if (!marker || marker.taskId !== plan.environmentTaskId) return 'marker_mismatch';
    return null;
  }

  async function localSlotProblem(slot: SlotPlan): Promise<ValidationProblem | null> {
    const dir = slot.recorded?.worktreePath ?? slot.worktreePath;
    if (!(await isRealDirectory(dir))) return 'not_a_directory';
    if (!(await showToplevel(dir, gitOptions))) return 'not_a_checkout';
    const [mine, source] = await Promise.all([commonDir(dir, gitOptions), commonDir(slot.sourcePath, gitOptions)]);
    if (!mine || !source || mine !== source) return 'repository_mismatch';
    return null;
  }

  return {
    async validateWorkspace(plan: LaunchPlan): Promise<void> {
      await withHeartbeat('validate', async () => {
        // A remote workspace is validated on its target: host git inspection does not apply.
        if (workspaceStepsOf(plan).remote) return remote.validateRemote(plan);
        if (plan.executorType === 'worktree' && !(await isRealDirectory(plan.workspacePath))) {
          logger.warn({ environmentId: plan.environmentId, sessionId: plan.sessionId, problem: 'not_a_directory' }, 'workspace validation refused');
          throw typedFailure('workspace_reuse_unsafe');
        }
        for (const slot of plan.slots) {
          const problem = plan.executorType === 'local' ? await localSlotProblem(slot) : await worktreeSlotProblem(plan, slot);
          if (problem) {
            logger.warn({ environmentId: plan.environmentId, sessionId: plan.sessionId, repositoryId: slot.repositoryId, problem }, 'workspace validation refused');
            throw typedFailure('workspace_reuse_unsafe', { problem });
          }
        }
      });
    },
  };
}

export type WorkspaceValidateActivities = ReturnType<typeof workspaceValidateActivities>;

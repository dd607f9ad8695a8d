/**
 * Attach's read-only validation on this host [R1.2], as the worktree and local executors share it:
 * nothing here creates, fetches, checks out, resets or writes. The workspace and every slot are
 * examined at the same time, then judged in order (the workspace folder first, then the slots as
 * listed), so a refusal names the same first problem every time.
 */
import type { LaunchPlan, SlotPlan, ValidationProblem } from '../../domain/launch';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { isRealDirectory } from './workspace-fs';

export async function validateOnHost(
  { logger }: ActivityDeps,
  plan: LaunchPlan,
  check: {
    /** The workspace path itself must be a real directory (a worktree's; the source checkout's is checked as its slot). */
    workspaceIsFolder: boolean;
    slotProblem: (slot: SlotPlan) => Promise<ValidationProblem | null>;
  },
): Promise<void> {
  const [workspaceIsDirectory, problems] = await Promise.all([
    check.workspaceIsFolder ? isRealDirectory(plan.workspacePath) : Promise.resolve(true),
    Promise.all(plan.slots.map((slot) => check.slotProblem(slot))),
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
        { environmentId: plan.environmentId, sessionId: plan.sessionId, repositoryId: slot.repositoryId, problem },
        'workspace validation refused',
      );
      throw typedFailure('workspace_reuse_unsafe', { problem });
    }
  }
}

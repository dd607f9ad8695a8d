import { describe, expect, it } from 'vitest';
import { decideWorkspaceSteps, executorFitsSlots, workspaceStepsOf } from '../../domain/launch-plan';

describe('what a plan does with its workspace, decided once', () => {
  it('an attach validates and creates nothing; a worktree workspace is created, not validated; local validates the source checkout; ssh does it all on its target', () => {
    expect(decideWorkspaceSteps('attached', 'worktree')).toEqual({
      validate: true,
      createWorktrees: false,
      remote: false,
    });
    expect(decideWorkspaceSteps('attached', 'local')).toEqual({
      validate: true,
      createWorktrees: false,
      remote: false,
    });
    expect(decideWorkspaceSteps('materialized', 'worktree')).toEqual({
      validate: false,
      createWorktrees: true,
      remote: false,
    });
    expect(decideWorkspaceSteps('materialized', 'local')).toEqual({
      validate: true,
      createWorktrees: false,
      remote: false,
    });
    expect(decideWorkspaceSteps('transitioned', 'worktree')).toEqual({
      validate: false,
      createWorktrees: true,
      remote: false,
    });
    expect(decideWorkspaceSteps('transitioned', 'local')).toEqual({
      validate: true,
      createWorktrees: false,
      remote: false,
    });
    expect(decideWorkspaceSteps('attached', 'ssh')).toEqual({ validate: true, createWorktrees: false, remote: true });
    expect(decideWorkspaceSteps('materialized', 'ssh')).toEqual({
      validate: false,
      createWorktrees: true,
      remote: true,
    });
    expect(decideWorkspaceSteps('transitioned', 'ssh')).toEqual({
      validate: false,
      createWorktrees: true,
      remote: true,
    });
  });

  it("the plan's own decision wins; a plan admitted before it carried one decides the same", () => {
    expect(
      workspaceStepsOf({
        role: 'materialized',
        executorType: 'worktree',
        workspace: { validate: true, createWorktrees: false },
      }),
    ).toEqual({ validate: true, createWorktrees: false });
    expect(workspaceStepsOf({ role: 'materialized', executorType: 'worktree' })).toEqual({
      validate: false,
      createWorktrees: true,
      remote: false,
    });
  });

  it('local fits exactly one repository; worktree any number', () => {
    expect([0, 1, 2].map((n) => executorFitsSlots('local', n))).toEqual([false, true, false]);
    expect([0, 1, 2].map((n) => executorFitsSlots('worktree', n))).toEqual([true, true, true]);
  });
});

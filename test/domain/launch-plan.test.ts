import { describe, expect, it } from 'vitest';
import { agentStartOf, publishedPlan, type LaunchPlan } from '../../domain/launch';
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

describe('a first launch’s plan once its inventory is published', () => {
  const slot = (repositoryId: string, worktreePath: string) => ({
    repositoryId,
    repositoryName: repositoryId,
    sourcePath: `/src/${repositoryId}`,
    baseBranch: 'main',
    branch: `task/${repositoryId}`,
    branchSlug: repositoryId,
    createBranch: true,
    worktreePath,
    position: 0,
    recorded: null,
  });
  const plan = {
    role: 'materialized',
    slots: [slot('a', '/ws/task-1/a'), slot('b', '/ws/task-1/b')],
  } as unknown as LaunchPlan;

  it('records each made worktree’s id on its slot, and the agent’s start carries it; a slot not made stays as it was', () => {
    const published = publishedPlan(plan, [
      { repositoryId: 'a', worktreeId: 'a3', worktreePath: '/ws/task-1/a', branch: 'task/a' },
      { repositoryId: 'b', worktreeId: null, worktreePath: '/ws/task-1/b', branch: 'task/b' },
    ]);
    expect(published.slots[0]!.recorded).toEqual({
      worktreeId: 'a3',
      worktreePath: '/ws/task-1/a',
      worktreeBranch: 'task/a',
    });
    expect(published.slots[1]!.recorded).toBeNull();
    expect(plan.slots[0]!.recorded).toBeNull(); // the admitted plan itself is left as it was
    expect(agentStartOf(published, ['true'], 'e').gitSlots.map((s) => s.worktreeId)).toEqual(['a3', null]);
  });
});

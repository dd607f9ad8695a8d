/** The recovery rules as data: which cleanup failures wait for an operator at once, what a cancelled delete leaves, the layout after an abandonment. */
import { describe, expect, it } from 'vitest';
import { CLEANUP_ERROR_RECOVERY, waitsForOperatorAtOnce } from '../../domain/cleanup';
import {
  emptyReport,
  leftoverWorkspace,
  type CleanupSnapshot,
  type SnapshotWorktree,
} from '../../domain/cleanup-snapshot';
import { materializeSlots } from '../../domain/launch-plan';
import { isTaskBranch, taskBranchName, taskFolder, taskRefFolder } from '../../domain/task-layout';

describe('cleanup failures: retried or sent to an operator', () => {
  it('an audit refusal, a changed host key and a remote branch that cannot come back wait for an operator at once; transient git, lock, host and target failures keep the schedule', () => {
    const operator = [
      'worktree_audit_not_directory',
      'worktree_audit_unregistered',
      'worktree_audit_other_branch',
      'worktree_audit_foreign_marker',
      'worktree_audit_head_moved',
      'worktree_audit_failed',
      'ssh_host_key_mismatch',
      'remote_branch_not_brought_back',
    ] as const;
    for (const c of operator) expect(waitsForOperatorAtOnce(c), c).toBe(true);
    for (const c of [
      'git_worktree_remove_failed',
      'git_prune_failed',
      'worktree_still_registered',
      'process_stop_failed',
      'host_unavailable',
      'ssh_target_unavailable',
      'database_failed',
      'internal',
    ] as const)
      expect(waitsForOperatorAtOnce(c), c).toBe(false);
    expect(Object.values(CLEANUP_ERROR_RECOVERY).filter((r) => r === 'operator')).toHaveLength(operator.length);
  });
});

describe('a cancelled delete records what it left', () => {
  const wt = (repositoryId: string, worktreePath: string | null): SnapshotWorktree => ({
    environmentId: 'e',
    inventoryRowId: repositoryId,
    repositoryId,
    sourcePath: '/src',
    worktreeId: worktreePath ? 'id' : null,
    worktreePath,
    branch: worktreePath ? 'b' : null,
    headCommit: null,
    baseBranch: 'main',
    taskOwnsBranch: true,
    status: 'active',
  });
  it('lists the worktrees not removed (and the task folder), never one already gone or removed', () => {
    const snapshot: CleanupSnapshot = {
      taskId: 't',
      environmentId: 'e',
      hostId: 'h',
      taskFolder: '/ws/task-t',
      worktrees: [wt('a', '/ws/task-t/a'), wt('b', '/ws/task-t/b'), wt('c', '/ws/task-t/c'), wt('d', null)],
      processes: [],
      borrowed: [],
    };
    const report = {
      ...emptyReport(),
      worktrees: [
        { repositoryId: 'a', worktreePath: '/ws/task-t/a', outcome: 'removed' as const },
        { repositoryId: 'b', worktreePath: '/ws/task-t/b', outcome: 'kept_dirty' as const },
      ],
    };
    expect(leftoverWorkspace(snapshot, report)).toEqual({
      taskFolder: '/ws/task-t',
      worktrees: [
        { repositoryId: 'b', worktreePath: '/ws/task-t/b', branch: 'b' },
        { repositoryId: 'c', worktreePath: '/ws/task-t/c', branch: 'b' },
      ],
    });
  });
});

describe('the layout after an abandonment', () => {
  const repo = {
    repositoryId: 'r',
    repositoryName: 'app',
    repositoryPath: '/src/app',
    position: 0,
    baseBranch: 'main',
    branchSlug: 'tws/t1',
    checkoutBranch: null,
  };
  it('generation 0 is the first folder and branch; the next generation a new folder and a new task branch, a requested branch kept as asked', () => {
    expect(materializeSlots([repo], 'worktree', taskFolder('/ws', 't1'))[0]).toMatchObject({
      worktreePath: '/ws/task-t1/app',
      branch: 'tws/t1',
      createBranch: true,
    });
    expect(materializeSlots([repo], 'worktree', taskFolder('/ws', 't1', 2), 2)[0]).toMatchObject({
      worktreePath: '/ws/task-t1-r2/app',
      branch: 'tws/t1-r2',
      createBranch: true,
    });
    expect(
      materializeSlots(
        [{ ...repo, checkoutBranch: 'feature', branchSlug: 'feature' }],
        'worktree',
        taskFolder('/ws', 't1', 1),
        1,
      )[0],
    ).toMatchObject({ worktreePath: '/ws/task-t1-r1/app', branch: 'feature', createBranch: false });
    expect(taskFolder('/ws', 't1', 1)).toBe('/ws/task-t1-r1');
  });
  it("a hand-over's recorded task branch is checked out as it is in its generation, and left for a new branch after an abandonment", () => {
    const handedOver = { ...repo, branchSlug: 'tws/t1/work', checkoutBranch: 'tws/t1/work' };
    expect(materializeSlots([handedOver], 'worktree', taskFolder('/ws', 't1'))[0]).toMatchObject({
      branch: 'tws/t1/work',
      createBranch: false,
    });
    expect(materializeSlots([handedOver], 'worktree', taskFolder('/ws', 't2', 1), 1)[0]).toMatchObject({
      worktreePath: '/ws/task-t2-r1/app',
      branch: 'tws/t1/work-r1',
      createBranch: true,
    });
    const afterTwo = { ...handedOver, checkoutBranch: 'tws/t1/work-r1' };
    expect(materializeSlots([afterTwo], 'worktree', taskFolder('/ws', 't2', 1), 1)[0]).toMatchObject({
      branch: 'tws/t1/work-r1',
      createBranch: false,
    });
    expect(materializeSlots([afterTwo], 'worktree', taskFolder('/ws', 't2', 2), 2)[0]).toMatchObject({
      branch: 'tws/t1/work-r2',
    });
    // A branch the user asked for is never replaced, whatever its name.
    const asked = { ...repo, branchSlug: 'feature/tws', checkoutBranch: 'feature/tws' };
    expect(materializeSlots([asked], 'worktree', taskFolder('/ws', 't1', 1), 1)[0]).toMatchObject({
      branch: 'feature/tws',
      createBranch: false,
    });
  });
  it("every generation's task branch is the task's own; nothing else is", () => {
    expect(['tws/t1/work', 'tws/t1/work-r1', 'tws/t1/work-r12'].map((b) => isTaskBranch(b, 't1'))).toEqual([
      true,
      true,
      true,
    ]);
    // Tasks created before task branches had their own folder (`tws/<task>/work`) keep their flat branch, still theirs.
    expect(['tws/t1', 'tws/t1-r1', 'tws/t1-r12'].map((b) => isTaskBranch(b, 't1'))).toEqual([true, true, true]);
    expect(
      ['tws/t1/work-r0', 'tws/t1/other', 'tws/t1/work/x', 'tws/t2/work'].map((b) => isTaskBranch(b, 't1')),
    ).toEqual([false, false, false, false]);
    expect(['tws/t1-r0', 'tws/t1-rx', 'tws/t1x', 'tws/t2', 'main', null].map((b) => isTaskBranch(b, 't1'))).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
  it('a sandboxed agent moves the ref folder of a service-made task branch only', () => {
    const id = '0b6f7c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b';
    expect(taskBranchName(id)).toBe(`tws/${id}/work`);
    expect(taskRefFolder(`tws/${id}/work`)).toBe(`refs/heads/tws/${id}`);
    expect(taskRefFolder(`tws/${id}/work-r3`)).toBe(`refs/heads/tws/${id}`);
    // A flat branch of an older task, a branch the task checked out, anything else under tws/: none.
    for (const branch of [
      `tws/${id}`,
      `tws/${id}-r1`,
      'main',
      'feature/x',
      `tws/${id}/other`,
      `tws/${id}/work/x`,
      `tws/${id}/work-r0`,
      'tws/../work',
      `tws/${id.toUpperCase()}/work`,
    ])
      expect(taskRefFolder(branch)).toBeNull();
  });
});

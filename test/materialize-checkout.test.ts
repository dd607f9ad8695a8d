/**
 * A slot is registered under the repository lock (`worktree add --no-checkout`) and checked out
 * after it: the result must be what one `git worktree add` makes, and a checkout that fails
 * must leave nothing behind, as git's own failed `worktree add` leaves nothing.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchRecordActivities } from '../activities/launch-records';
import { workspaceMaterializeActivities } from '../activities/workspace-materialize';
import type { LaunchPlan } from '../domain/launch';
import { createHarness, type Harness } from './support/harness';
import { createTask, registerRepo } from './support/scenario';
import { branches, clearGitFault, git, gitWrapper, makeRepo, worktreePaths } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

/** A real first launch's plan (admitted, so this session is the environment's materializer). */
async function planFor(repoId: string): Promise<LaunchPlan> {
  const taskId = await createTask(h, [repoId]);
  const deps = { pool: h.pool, config: h.config, logger: pino({ level: 'silent' }) };
  const plan = await launchRecordActivities(deps).admitLaunch({ sessionId: randomUUID(), taskId, executorType: 'worktree', agentProfile: 'shell', command: ['sleep', '60'], name: null, hostId: h.config.hostId });
  expect(plan.role).toBe('materialized');
  return plan;
}

const materializer = (gitBinary: string = h.config.gitBinary) => workspaceMaterializeActivities({ pool: h.pool, config: { ...h.config, gitBinary }, logger: pino({ level: 'silent' }) });

const files = (count: number): Record<string, string> => Object.fromEntries(Array.from({ length: count }, (_, i) => [`src/m${i % 5}/f${i}.ts`, `export const v${i} = ${i};\n`]));

/** What a worktree is, as git and the disk show it (timestamps aside). */
function worktreeFacts(repo: string, worktree: string) {
  const adminDir = readFileSync(path.join(worktree, '.git'), 'utf8').trim().replace(/^gitdir: /, '');
  const reflog = readFileSync(path.join(adminDir, 'logs', 'HEAD'), 'utf8').split('\n').filter(Boolean).map((l) => l.split('\t')[1] ?? '(created)');
  return {
    head: git(worktree, 'rev-parse', 'HEAD').trim(),
    branch: git(worktree, 'symbolic-ref', '--short', 'HEAD').trim(),
    status: git(worktree, 'status', '--porcelain=v1', '--untracked-files=all'),
    index: git(worktree, 'ls-files', '-s'),
    tree: git(worktree, 'ls-tree', '-r', 'HEAD'),
    checkedOut: git(worktree, 'ls-files', '--others', '--modified', '--deleted'),
    adminFiles: readdirSync(adminDir).sort(),
    reflog,
    registered: worktreePaths(repo).includes(worktree),
  };
}

describe('a worktree registered under the lock and checked out after it', () => {
  it('is what one `git worktree add` makes: same files, index, HEAD, branch, admin files and reflog, clean, its id registered', async () => {
    const repo = makeRepo(h.scratch, 'same-as-add', { files: files(40) });
    const repoId = await registerRepo(h, repo, 'same-as-add');
    const plan = await planFor(repoId);
    const [made] = await materializer().materializeWorkspace(plan);
    const reference = path.join(h.scratch, 'reference-add');
    git(repo, 'worktree', 'add', '--no-track', '-b', 'reference', reference, 'main');

    const ours = worktreeFacts(repo, plan.workspacePath);
    const theirs = worktreeFacts(repo, reference);
    expect(ours).toEqual({ ...theirs, branch: plan.slots[0]!.branch });
    expect(ours.status).toBe('');
    expect(ours.head).toBe(git(repo, 'rev-parse', 'main').trim());
    expect(made).toMatchObject({ branch: plan.slots[0]!.branch, headCommit: ours.head, createdBranch: true, createdWorktree: true });
    expect(readFileSync(path.join(plan.workspacePath, '.git'), 'utf8')).toContain(`/worktrees/${made!.worktreeId}`);
    expect(readFileSync(path.join(plan.workspacePath, 'src/m1/f1.ts'), 'utf8')).toBe('export const v1 = 1;\n');
  });

  it('runs the post-checkout hook as `git worktree add` does: null previous HEAD, the new HEAD, a branch checkout', async () => {
    const repo = makeRepo(h.scratch, 'hooked');
    const repoId = await registerRepo(h, repo, 'hooked');
    const seen = path.join(h.scratch, 'hook-args');
    const hook = path.join(repo, '.git', 'hooks', 'post-checkout');
    mkdirSync(path.dirname(hook), { recursive: true });
    writeFileSync(hook, `#!/bin/sh\necho "$1 $2 $3 $(pwd)" >> ${seen}\n`);
    chmodSync(hook, 0o755);
    const plan = await planFor(repoId);
    await materializer().materializeWorkspace(plan);
    const head = git(repo, 'rev-parse', 'main').trim();
    expect(readFileSync(seen, 'utf8')).toBe(`${'0'.repeat(40)} ${head} 1 ${plan.workspacePath}\n`);
  });

  it('whose checkout fails leaves nothing behind: not registered, no task branch, no folder; the launch can be made again', async () => {
    const repo = makeRepo(h.scratch, 'checkout-fails', { files: files(20) });
    const repoId = await registerRepo(h, repo, 'checkout-fails');
    const wrapper = gitWrapper(mkdtempSync(path.join(os.tmpdir(), 'tws-checkout-')), { failSubcommand: 'reset --hard', failTimes: 1 });
    const plan = await planFor(repoId);

    await expect(materializer(wrapper).materializeWorkspace(plan)).rejects.toMatchObject({ type: 'workspace_materialization_failed' });
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(branches(repo)).toEqual(['main']);
    expect(existsSync(plan.taskFolder)).toBe(false);
    expect(existsSync(path.join(repo, '.git', 'worktrees')) ? readdirSync(path.join(repo, '.git', 'worktrees')) : []).toEqual([]);

    clearGitFault(wrapper);
    const [made] = await materializer(wrapper).materializeWorkspace(plan);
    expect(made).toMatchObject({ createdBranch: true, createdWorktree: true });
    expect(worktreeFacts(repo, plan.workspacePath)).toMatchObject({ status: '', registered: true, checkedOut: '' });
  });

  it('left registered but not checked out by an attempt that stopped in between is checked out by the next attempt, which adopts it', async () => {
    const repo = makeRepo(h.scratch, 'stopped-between', { files: files(20) });
    const repoId = await registerRepo(h, repo, 'stopped-between');
    const plan = await planFor(repoId);
    mkdirSync(plan.taskFolder, { recursive: true });
    git(repo, 'worktree', 'add', '--no-checkout', '--no-track', '-b', plan.slots[0]!.branch, plan.workspacePath, 'main'); // what the admin step left

    const [made] = await materializer().materializeWorkspace(plan);
    expect(made).toMatchObject({ createdWorktree: false, headCommit: git(repo, 'rev-parse', 'main').trim() });
    expect(worktreeFacts(repo, plan.workspacePath)).toMatchObject({ status: '', registered: true, checkedOut: '' });
    expect(readFileSync(path.join(plan.workspacePath, 'src/m0/f0.ts'), 'utf8')).toBe('export const v0 = 0;\n');
    expect(worktreePaths(repo)).toHaveLength(2);
  });
});

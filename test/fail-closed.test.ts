/** Errors are never read as "nothing there": an unreadable status is dirty, an unreadable or doubtful folder is kept [R6.6, R6.7]. */
import { chmodSync, existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { archive, deleteTask, waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN } from './support/harness';
import { taskWithSession } from './support/scenario';
import { git, worktreePaths } from './support/world';

const { harness, scratch } = harnessesPerTest();

/** A git whose `status` always fails, and (optionally) whose `worktree remove` does too. */
function brokenGit(dir: string, alsoRemove: boolean): string {
  const file = path.join(dir, `git-broken-${alsoRemove ? 'both' : 'status'}`);
  writeFileSync(
    file,
    `#!/usr/bin/env bash
if [ "$1" = "status" ]; then echo "fatal: injected" >&2; exit 128; fi
${alsoRemove ? 'if [ "$1 $2" = "worktree remove" ]; then echo "fatal: injected" >&2; exit 128; fi' : ''}
exec git "$@"
`,
  );
  chmodSync(file, 0o755);
  return file;
}

describe('an unreadable git status is dirty', () => {
  it('a delete without consent is refused task_delete_dirty_worktree, and nothing changes', async () => {
    const dir = await scratch();
    const h = await harness({ gitBinary: brokenGit(dir, false) });
    const t = await taskWithSession(h, 'status-unreadable');
    const res = await deleteTask(h, t.taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expect(res.body.error.code).toBe('task_delete_dirty_worktree');
    expect(res.body.error.dirtyRepositories).toHaveLength(1);
    expect((await h.api('GET', `/v1/tasks/${t.taskId}`)).status).toBe(200);
    expect(worktreePaths(t.repo)).toHaveLength(2);
  });

  it('an archive whose removal git refuses keeps the worktree when its status cannot be read', async () => {
    const dir = await scratch();
    const h = await harness({ gitBinary: brokenGit(dir, true) });
    const t = await taskWithSession(h, 'kept-on-doubt');
    const accepted = await archive(h, t.taskId);
    const job = await waitForJob(h, accepted.operationId);
    expect(job.report.worktrees.map((w: any) => w.outcome)).toEqual(['kept_dirty']);
    expect(worktreePaths(t.repo)).toHaveLength(2);
  });
});

describe('the orphan sweep keeps what it cannot prove removable', () => {
  it('a repository inside an old folder, or a worktree deeper than one level, keeps the folder; an empty old folder goes', async () => {
    const h = await harness();
    const t = await taskWithSession(h, 'sweep-source');
    const root = h.config.workspaceRoot;
    const aged = (name: string) => {
      const old = new Date(Date.now() - 48 * 3600_000);
      utimesSync(path.join(root, name), old, old);
    };
    mkdirSync(path.join(root, 'nested-repo', 'inner'), { recursive: true });
    git(path.join(root, 'nested-repo', 'inner'), 'init', '-q');
    writeFileSync(path.join(root, 'nested-repo', 'inner', 'work.txt'), 'unsaved');
    aged('nested-repo');
    mkdirSync(path.join(root, 'deep', 'a'), { recursive: true });
    git(t.repo, 'worktree', 'add', '-q', '-b', 'deep-branch', path.join(root, 'deep', 'a', 'b'));
    aged('deep');
    mkdirSync(path.join(root, 'empty-old'));
    aged('empty-old');

    const res = await h.api('POST', '/v1/orphan-sweep', {}, OPERATOR_TOKEN);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const kept = Object.fromEntries(res.body.kept.map((k: any) => [k.name, k.reason]));
    expect(kept['nested-repo']).toBe('doubt');
    expect(kept.deep).toBe('doubt');
    expect(res.body.removed).toEqual(['empty-old']);
    expect(existsSync(path.join(root, 'nested-repo', 'inner', 'work.txt'))).toBe(true);
    expect(existsSync(path.join(root, 'deep', 'a', 'b', '.git'))).toBe(true);
  });
});

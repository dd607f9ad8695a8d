/**
 * For the tests of merges under faults [R8.3]: a git that holds a chosen `update-ref` (a base
 * about to move) until the test lets it go, tasks on several repositories, and what a merge left
 * on each base.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { taskBranchName, taskDirName } from '../../domain/task-layout';
import { commitIn, reflogLength, treeOf } from './finishing';
import type { Harness } from './harness';
import { agentEnded, createTask, launch, registerRepo, send, waitUntil } from './scenario';
import { commitOf, git, makeRepo } from './world';

export interface PausingGit {
  /** The git binary to configure (TWS_GIT_BINARY). */
  binary: string;
  /** Counts the update-refs from now on, from 1 in each repository; those named `<repository folder>-<n>` are held. */
  arm(pauses: string[]): void;
  /** Resolves once the named update-ref is held (it has not run). */
  pausedAt(pause: string, timeoutMs?: number): Promise<void>;
  /** Lets the held update-ref run; `abandon`: it fails without running (the process that asked died first). */
  release(pause: string, opts?: { abandon?: boolean }): void;
  /** Every held update-ref let go, and the counting ended. */
  disarm(): void;
}

/**
 * A git that, once armed (`<binary>.arm`), numbers the `update-ref`s it runs in each repository
 * (by its work tree's folder name); the one whose `<binary>.pause-<repo>-<n>` exists touches
 * `<binary>.paused-<repo>-<n>` and waits until that file is removed, then runs git, or fails
 * without running it when `<binary>.abandon-<repo>-<n>` exists.
 */
export function pausingGit(dir: string): PausingGit {
  const binary = path.join(dir, 'git-pausing');
  writeFileSync(
    binary,
    `#!/usr/bin/env bash
c='${binary}'
if [ "$1" = "update-ref" ] && [ -e "$c.arm" ]; then
  repo=$(basename "\${GIT_WORK_TREE:-$PWD}")
  exec 9>>"$c.lock"; flock 9
  n=$(( $(cat "$c.n-$repo" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$c.n-$repo"
  exec 9>&-
  if [ -e "$c.pause-$repo-$n" ]; then
    touch "$c.paused-$repo-$n"
    while [ -e "$c.pause-$repo-$n" ]; do sleep 0.05; done
    if [ -e "$c.abandon-$repo-$n" ]; then echo "fatal: abandoned" >&2; exit 128; fi
  fi
fi
exec git "$@"
`,
  );
  chmodSync(binary, 0o755);
  const controls = (prefix: string) =>
    readdirSync(dir)
      .filter((name) => name.startsWith(`${path.basename(binary)}.${prefix}`))
      .map((name) => path.join(dir, name));
  return {
    binary,
    arm(pauses) {
      for (const file of controls('')) rmSync(file, { force: true });
      for (const p of pauses) writeFileSync(`${binary}.pause-${p}`, '');
      writeFileSync(`${binary}.arm`, '');
    },
    async pausedAt(pause, timeoutMs = 60_000) {
      await waitUntil(async () => existsSync(`${binary}.paused-${pause}`), `update-ref ${pause} held`, timeoutMs);
    },
    release(pause, opts = {}) {
      if (opts.abandon) writeFileSync(`${binary}.abandon-${pause}`, '');
      rmSync(`${binary}.pause-${pause}`, { force: true });
    },
    disarm() {
      rmSync(`${binary}.arm`, { force: true });
      for (const file of controls('pause-')) rmSync(file, { force: true });
    },
  };
}

export interface Repo {
  dir: string;
  id: string;
  name: string;
  worktree: string;
}

/**
 * A task on one new repository per entry of `commits` (named `<name>-1`, `<name>-2`, ...: its
 * worktrees are `<workspaceRoot>/task-<id>/<name>-<n>`), an agent that ran and ended, and each
 * entry's files committed on the task branch in that repository.
 */
export async function taskOnRepositories(
  h: Harness,
  name: string,
  commits: Record<string, string>[],
): Promise<{ taskId: string; repos: Repo[]; branch: string }> {
  const made = [];
  for (let i = 0; i < commits.length; i++) {
    const repoName = `${name}-${i + 1}`;
    const dir = makeRepo(h.scratch, repoName);
    made.push({ dir, name: repoName, id: await registerRepo(h, dir, repoName) });
  }
  const taskId = await createTask(
    h,
    made.map((r) => r.id),
    { title: `finish ${name}` },
  );
  const launched = await launch(h, taskId, { command: ['true'] });
  expect(launched.status, JSON.stringify(launched.body)).toBe(201);
  await agentEnded(h, launched.body.sessionId);
  const repos = made.map((r) => ({ ...r, worktree: path.join(h.config.workspaceRoot, taskDirName(taskId), r.name) }));
  repos.forEach((r, i) => commitIn(r.worktree, commits[i]!));
  return { taskId, repos, branch: taskBranchName(taskId) };
}

export interface BaseState {
  commit: string;
  moves: number;
}

/** Each repository's base: its commit and how many times it moved so far. */
export const basesOf = (repos: Repo[], branch = 'main'): BaseState[] =>
  repos.map((r) => ({ commit: commitOf(r.dir, branch), moves: reflogLength(r.dir, branch) }));

/** The merge's resource once it is no longer running, through the gateway at `baseUrl` (retried while it cannot answer). */
export async function settledMerge(baseUrl: string, operationId: string, timeoutMs = 120_000): Promise<any> {
  let body: any;
  await waitUntil(
    async () => {
      const res = await send(baseUrl, 'GET', `/v1/merges/${operationId}`).catch(() => null);
      body = res?.body;
      return res?.status === 200 && body.state !== 'running';
    },
    `merge ${operationId} settled`,
    timeoutMs,
    async () => body,
  );
  return body;
}

/** The newest merge of a task (its request's answer may have been lost). */
export async function newestMergeOf(h: Harness, taskId: string): Promise<string> {
  let id: string | undefined;
  await waitUntil(async () => {
    id = (await h.api('GET', `/v1/tasks/${taskId}/merges`)).body.items?.[0]?.operationId;
    return id !== undefined;
  }, `a merge of task ${taskId}`);
  return id!;
}

/** The base as the merge left it: moved once, from where it was to the merge's commit, whose tree is git's own merge. */
export function expectMovedOnce(
  repo: Repo,
  before: BaseState,
  merged: { repositoryId: string; before: string; after: string },
  tree: string,
): void {
  expect(merged.repositoryId).toBe(repo.id);
  expect(merged.before).toBe(before.commit);
  expect(commitOf(repo.dir, 'main')).toBe(merged.after);
  expect(reflogLength(repo.dir, 'main')).toBe(before.moves + 1);
  expect(git(repo.dir, 'rev-parse', 'main~1')).toBe(before.commit);
  expect(treeOf(repo.dir, 'main')).toBe(tree);
}

/** A process of the test's own ended with SIGKILL, once it has exited. */
export async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

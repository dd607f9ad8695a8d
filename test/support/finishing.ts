/** A task's worktree with work on its branch, and the requests of finishing it [R8], for the merge tests. */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { taskBranchName, taskDirName } from '../../domain/task-layout';
import { USER_TOKEN, type Harness } from './harness';
import { agentEnded, createTask, launch, registerRepo } from './scenario';
import { git, makeRepo } from './world';

export interface TaskWork {
  repo: string;
  repoId: string;
  taskId: string;
  sessionId: string;
  worktree: string;
  branch: string;
}

/** A repository, a task on it with an agent that ended, and the task's commits (files → content) on its branch. */
export async function taskWithCommits(
  h: Harness,
  name: string,
  commits: Record<string, string>[],
  opts: { files?: Record<string, string>; repo?: { path: string; id: string } } = {},
): Promise<TaskWork> {
  const repo = opts.repo?.path ?? makeRepo(h.scratch, name, opts.files ? { files: opts.files } : {});
  const repoId = opts.repo?.id ?? (await registerRepo(h, repo, name));
  const taskId = await createTask(h, [repoId], { title: `finish ${name}` });
  const launched = await launch(h, taskId, { command: ['true'] });
  expect(launched.status, JSON.stringify(launched.body)).toBe(201);
  await agentEnded(h, launched.body.sessionId);
  const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), path.basename(repo));
  for (const files of commits) commitIn(worktree, files);
  return { repo, repoId, taskId, sessionId: launched.body.sessionId, worktree, branch: taskBranchName(taskId) };
}

/** A commit of these files in a folder (a worktree, or the source checkout as its owner would). */
export function commitIn(dir: string, files: Record<string, string>, message = 'work'): string {
  for (const [file, content] of Object.entries(files)) writeFileSync(path.join(dir, file), content);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

export const read = (dir: string, file: string): string => readFileSync(path.join(dir, file), 'utf8');

/** A request with `Prefer: wait` (and an Idempotency-Key when given). */
export async function finish(
  h: Harness,
  method: string,
  route: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(h.baseUrl + route, {
    method,
    headers: {
      authorization: `Bearer ${USER_TOKEN}`,
      prefer: 'wait',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The tree git's own merge of the task branch into main would make (what every strategy's base must hold). */
export const mergedTree = (repo: string, branch: string): string =>
  git(repo, 'merge-tree', '--write-tree', 'main', branch).split('\n')[0]!;

export const treeOf = (repo: string, ref: string): string => git(repo, 'rev-parse', `${ref}^{tree}`);

/** How many times a branch moved (its reflog's entries). */
export const reflogLength = (repo: string, branch: string): number =>
  git(repo, 'reflog', 'show', '--format=%H', `refs/heads/${branch}`).split('\n').filter(Boolean).length;

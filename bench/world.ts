/**
 * The world the benchmark measures in: real git repositories of a realistic size, registered
 * and turned into tasks through the API, and the agent processes the launches leave behind.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type pg from 'pg';
import { loadConfig } from '../domain/config';
import { agentLimitsLayout, sweepAgentGroups } from '../executors/host/agent-limits';
import { processStartTime } from '../executors/host/process-identity';
import type { Api } from './api';
import { mapLimit } from './processes';

const execFileAsync = promisify(execFile);

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};

/** Asynchronous, for set-up work that runs while memory is sampled (a sync call would stall the sampler). */
export async function gitAsync(dir: string, ...args: string[]): Promise<string> {
  return (
    await execFileAsync('git', args, { cwd: dir, encoding: 'utf8', env: GIT_ENV, maxBuffer: 64 * 1024 * 1024 })
  ).stdout.trim();
}

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: dir, encoding: 'utf8', env: GIT_ENV, maxBuffer: 64 * 1024 * 1024 }).trim();
}

export interface Repo {
  id: string;
  name: string;
  path: string;
  /** The commit `main` points at (the floor records it as the new worktree's HEAD). */
  head: string;
}

/** A repository with `files` source files in nested folders and a few commits on `main`. */
export function makeRepoOnDisk(parent: string, name: string, files: number): string {
  const dir = path.join(parent, name);
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  const line = 'export const value = "the quick brown fox jumps over the lazy dog";\n';
  for (let i = 0; i < files; i++) {
    const sub = path.join(dir, 'src', `pkg${i % 20}`, `mod${i % 7}`);
    mkdirSync(sub, { recursive: true });
    writeFileSync(path.join(sub, `file${i}.ts`), `// ${name} file ${i}\n` + line.repeat(10 + (i % 40)));
  }
  writeFileSync(path.join(dir, 'README.md'), `# ${name}\n`);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial import');
  for (let c = 1; c <= 3; c++) {
    writeFileSync(path.join(dir, 'CHANGELOG.md'), `change ${c}\n`);
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', `change ${c}`);
  }
  return dir;
}

export async function makeRepo(api: Api, reposDir: string, name: string, files: number): Promise<Repo> {
  const dir = makeRepoOnDisk(reposDir, name, files);
  return { id: await api.registerRepository(name, dir), name, path: dir, head: git(dir, 'rev-parse', 'main') };
}

export async function createTasks(
  api: Api,
  count: number,
  repos: Repo[],
  title: string,
  boardId?: string,
): Promise<string[]> {
  return mapLimit(
    Array.from({ length: count }, (_, i) => i),
    4,
    (i) =>
      api.createTask(
        `${title} ${i + 1}`,
        repos.map((r) => r.id),
        boardId,
      ),
  );
}

/** First launches of new tasks (the set-up of attach scenarios): every environment ends ready. */
export async function materializeTasks(api: Api, taskIds: string[], concurrency = 1): Promise<void> {
  await mapLimit(taskIds, concurrency, (taskId) => api.launchOk(taskId, 'materialized'));
}

/** Registered worktree paths of a repository (`git worktree list --porcelain`). */
export function registeredWorktrees(repoPath: string): Set<string> {
  return new Set(
    git(repoPath, 'worktree', 'list', '--porcelain')
      .split('\n')
      .filter((l) => l.startsWith('worktree '))
      .map((l) => l.slice(9)),
  );
}

/**
 * The agent processes the launches started (product and floor alike record them in `executions`),
 * on every host of the run (all on this machine), that still run: rows `running` whose pid and
 * start time still name the same process.
 */
async function liveAgents(pool: pg.Pool): Promise<{ id: string; pid: number }[]> {
  const rows = (
    await pool.query<{ id: string; pid: number; process_start_time: string }>(
      `SELECT id, pid, process_start_time FROM executions WHERE status = 'running'`,
    )
  ).rows;
  const live: { id: string; pid: number }[] = [];
  for (const row of rows)
    if (row.pid > 1 && (await processStartTime(row.pid)) === row.process_start_time)
      live.push({ id: row.id, pid: row.pid });
  return live;
}

export async function liveAgentPids(pool: pg.Pool): Promise<number[]> {
  return (await liveAgents(pool)).map((agent) => agent.pid);
}

/**
 * Kills the agent processes the launches started ({@link liveAgentPids}), by process group. With
 * `settled`, then waits (up to 30 s) until their hosts recorded each end, which first brings home
 * what a sandboxed agent wrote into its task stores: the next launch measured does not queue behind it.
 */
export async function killAgents(pool: pg.Pool, opts: { settled?: boolean } = {}): Promise<number> {
  const killed: string[] = [];
  for (const agent of await liveAgents(pool)) {
    try {
      process.kill(-agent.pid, 'SIGKILL');
      killed.push(agent.id);
    } catch {
      // already gone
    }
  }
  if (opts.settled && killed.length > 0) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const left = await pool.query(`SELECT 1 FROM executions WHERE id = ANY($1) AND status = 'running'`, [killed]);
      if (left.rowCount === 0 || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return killed.length;
}

/**
 * The control groups (agents' limits) of this run's tasks that their supervisors, killed with
 * their agents, could not remove: every empty one, at once. Answers how many went.
 */
export async function sweepRunGroups(root: string, pool: pg.Pool): Promise<number> {
  const layout = await agentLimitsLayout(loadConfig(process.env, { cwd: root, hostname: 'bench' }).limits);
  if (!layout) return 0;
  const tasks = (await pool.query<{ id: string }>('SELECT id FROM tasks')).rows.map((row) => row.id);
  return sweepAgentGroups(layout, { minAgeMs: 0, taskIds: new Set(tasks) });
}

/** Building and reading the real world in tests: git repositories, folders, processes, rows. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
  mkdirSync,
  chmodSync,
  rmSync,
} from 'node:fs';
import path from 'node:path';
import type pg from 'pg';

export function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.com',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.com',
      // A test's status only looks: it never writes an index back (as the service's git).
      GIT_OPTIONAL_LOCKS: '0',
    },
  }).trim();
}

/** A repository with one commit on `main` (and any extra branches), as a developer would have it. */
export function makeRepo(
  parent: string,
  name: string,
  opts: { branches?: string[]; files?: Record<string, string> } = {},
): string {
  const dir = path.join(parent, name);
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  for (const [file, content] of Object.entries(opts.files ?? { 'README.md': `# ${name}\n` })) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
  for (const branch of opts.branches ?? []) git(dir, 'branch', branch);
  // A person's checkout, not root's: a `local` agent runs as the checkout's owner.
  execFileSync('chown', ['-R', `${CHECKOUT_OWNER}:${CHECKOUT_OWNER}`, dir]);
  return dir;
}

/** The uid test checkouts belong to (outside TWS_AGENT_UIDS). */
export const CHECKOUT_OWNER = 1000;

export const branches = (repo: string): string[] =>
  git(repo, 'for-each-ref', '--format=%(refname:short)', 'refs/heads/').split('\n').filter(Boolean).sort();
export const commitOf = (repo: string, ref: string): string => git(repo, 'rev-parse', ref);
export const worktreePaths = (repo: string): string[] =>
  git(repo, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice(9));

/** Everything about a folder that attach must not change: every file's bytes, links and modes (recursive, .git included unless skipped). */
export function fingerprint(dir: string, skip: string[] = []): string {
  const hash = createHash('sha256');
  const walk = (p: string) => {
    if (skip.includes(path.relative(dir, p))) return;
    const st = lstatSync(p);
    hash.update(`${path.relative(dir, p)}|${st.mode}|`);
    if (st.isSymbolicLink()) hash.update(readlinkSync(p));
    else if (st.isDirectory()) for (const child of readdirSync(p).sort()) walk(path.join(p, child));
    else hash.update(readFileSync(p));
  };
  if (existsSync(dir)) walk(dir);
  return hash.digest('hex');
}

export function listDir(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export const processCwd = (pid: number): string => readlinkSync(`/proc/${pid}/cwd`);

export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
}

/** A git wrapper that sleeps before `worktree add`, or fails the first N calls of a subcommand: faults through configuration. */
/**
 * A git that sleeps or fails where a test says. `pauseAfterWorktreeList`: once armed
 * (`armGitPause`), the next `worktree list` answers its listing only after the pause, having
 * touched `<wrapper>.paused` when its listing was read: the test changes the world between a
 * listing and what the caller does with it. Its sleeps stop while `<wrapper>.fast` exists
 * (`setGitSlow`): a test that needed a slow step to kill a process inside it lets the recovery
 * run at git's own pace.
 */
export function gitWrapper(
  dir: string,
  opts: {
    sleepOnWorktreeAdd?: number;
    sleepOnWorktreeList?: number;
    sleepOnWorktreeRemove?: number;
    pauseAfterWorktreeList?: number;
    failSubcommand?: string;
    failTimes?: number;
    logTo?: string;
  },
): string {
  const file = path.join(dir, `git-wrapper-${Math.random().toString(36).slice(2)}`);
  const counter = `${file}.count`;
  writeFileSync(
    file,
    `#!/usr/bin/env bash
${opts.logTo ? `echo "$*" >> '${opts.logTo}'` : ''}
if [ "$1" = "worktree" ] && [ "$2" = "add" ] && [ -n "${opts.sleepOnWorktreeAdd ?? ''}" ] && [ ! -e "${file}.fast" ]; then touch "${file}.began-add" "${file}.began-any"; sleep ${opts.sleepOnWorktreeAdd ?? 0}; fi
if [ "$1" = "worktree" ] && [ "$2" = "list" ] && [ -n "${opts.sleepOnWorktreeList ?? ''}" ] && [ ! -e "${file}.fast" ]; then touch "${file}.began-list" "${file}.began-any"; sleep ${opts.sleepOnWorktreeList ?? 0}; fi
if [ "$1" = "worktree" ] && [ "$2" = "remove" ] && [ -n "${opts.sleepOnWorktreeRemove ?? ''}" ] && [ ! -e "${file}.fast" ]; then touch "${file}.began-remove" "${file}.began-any"; sleep ${opts.sleepOnWorktreeRemove ?? 0}; fi
if [ -n "${opts.failSubcommand ?? ''}" ] && [ "$1 $2" = "${opts.failSubcommand ?? ''}" ]; then
  n=$(cat "${counter}" 2>/dev/null || echo 0)
  if [ "$n" -lt "${opts.failTimes ?? 0}" ]; then echo $((n+1)) > "${counter}"; echo "fatal: injected failure" >&2; exit 128; fi
fi
${
  opts.pauseAfterWorktreeList
    ? `if [ "$1" = "worktree" ] && [ "$2" = "list" ] && rm "${file}.pause" 2>/dev/null; then
  out=$(git "$@"); code=$?; touch "${file}.paused"; sleep ${opts.pauseAfterWorktreeList}; printf '%s\\n' "$out"; exit $code
fi`
    : ''
}
exec git "$@"
`,
  );
  chmodSync(file, 0o755);
  return file;
}

/**
 * Resolves once a wrapper's slow `git worktree <step>` has begun (it sleeps in it now), so that a
 * test kills a process in the middle of that step rather than a fixed time after asking for it.
 */
export async function slowGitStepBegun(
  wrapper: string,
  step: 'add' | 'list' | 'remove' | 'any',
  timeoutMs = 30_000,
): Promise<void> {
  const marker = `${wrapper}.began-${step}`;
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(marker)) {
    if (Date.now() > deadline) throw new Error(`no slow git worktree ${step} began within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Turns a wrapper's sleeps off (`slow` false) or on again. A step asleep already finishes its
 * sleep; the ones after it run at once. For a test whose process was killed inside a slow step:
 * what recovers then need not wait out the sleep again on every worktree step.
 */
export function setGitSlow(wrapper: string, slow: boolean): void {
  if (slow) rmSync(`${wrapper}.fast`, { force: true });
  else writeFileSync(`${wrapper}.fast`, '');
}

/** Clears the marker of a wrapper's slow step, so that slowGitStepBegun waits for the next one. */
export function clearSlowGitStep(wrapper: string, step: 'add' | 'list' | 'remove' | 'any'): void {
  rmSync(`${wrapper}.began-${step}`, { force: true });
}

/** The git commands a wrapper's `logTo` recorded so far, one a line, in order (none before the first). */
export function loggedGitCommands(logFile: string): string[] {
  return existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').filter(Boolean) : [];
}

/** Row counts of every table: "changes nothing" is checked against these. */
export async function rowCounts(pool: pg.Pool): Promise<Record<string, number>> {
  const tables = [
    'repositories',
    'boards',
    'workspace_groups',
    'tasks',
    'task_repositories',
    'task_environments',
    'environment_repos',
    'sessions',
    'executions',
    'cleanup_jobs',
    'git_status_observations',
  ];
  const counts: Record<string, number> = {};
  for (const t of tables) counts[t] = Number((await pool.query(`SELECT count(*) AS n FROM ${t}`)).rows[0].n);
  return counts;
}

/** Arms a wrapper's one pause (`pauseAfterWorktreeList`); resolves once a listing was read and the pause began. */
export async function armGitPause(wrapper: string): Promise<() => Promise<void>> {
  rmSync(`${wrapper}.paused`, { force: true });
  writeFileSync(`${wrapper}.pause`, '');
  return async () => {
    for (let i = 0; i < 600 && !existsSync(`${wrapper}.paused`); i++) await new Promise((r) => setTimeout(r, 50));
    if (!existsSync(`${wrapper}.paused`)) throw new Error('the armed git pause never began');
  };
}

/** Ends an injected fault: the wrapper's failure counter is set past its limit. */
export function clearGitFault(wrapper: string): void {
  writeFileSync(`${wrapper}.count`, '1000000');
}

/**
 * Cleanup's git administration of one repository, in turns. Steps that arrive while the
 * repository's lock is held (many tasks' worktrees of one repository: a board delete, archives
 * at once) wait for the next turn and are served together in it: one hold of the lock, one
 * listing of the repository's worktrees for their audits, one listing at the turn's end for
 * every removal to be verified. Each step keeps its own audit and its own outcome; only the
 * lock and the listings are shared [R6.4; bulk removals batched per repository].
 */
import type pg from 'pg';
import type { SimpleGit } from 'simple-git';
import { realPathOrResolved } from './workspace-fs';
import { withRepositoryLock, type LockHoldWatch } from '../../db/locks';
import { branchCommits, branchesMergedInto } from '../../git/branches';
import { gitAt, type GitOptions } from '../../git/git';
import { listWorktrees, type WorktreeEntry } from '../../git/worktrees';

/** At most this many steps share one hold of the lock, so a launch of the repository waits for a turn, not for a whole bulk cleanup. */
const MAX_STEPS_PER_TURN = 16;

export interface Turn {
  git: SimpleGit;
  /** The registration at this path as the turn found it (other steps' removals do not change it). */
  registrationAt(worktreePath: string): Promise<WorktreeEntry | null>;
  /** The registrations as they are now: read again once a step of the turn removed or pruned. */
  current(): Promise<WorktreeEntry[]>;
  /** Whether a worktree is registered at this path now (on the current registrations, by real path). */
  registeredNow(worktreePath: string): Promise<boolean>;
  /** A step removed or pruned registrations. */
  changed(): void;
  /**
   * A branch the step named when it queued (`inTurn`'s `branch`): its commit (null: no such
   * branch) and whether base contains it. Read for every such branch of the turn with that base
   * at once (two git processes for the turn, not two per step).
   */
  branch(name: string, base: string): Promise<{ commit: string | null; merged: boolean }>;
  /** A step deleted a branch: the turn's later readers see it gone. */
  branchDeleted(name: string): void;
}

/** What a step answers, and what it checks once every step of its turn ran (on one listing read after them). */
export interface StepOutcome<T> {
  value: T;
  afterTurn?: (turn: Turn) => Promise<void>;
}

interface Queued {
  step: (turn: Turn) => Promise<StepOutcome<unknown>>;
  /** The branch the step reads through `turn.branch`, so the turn reads it with the others. */
  branch?: BranchOfStep;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface BranchOfStep {
  name: string;
  base: string;
}

const perPool = new WeakMap<pg.Pool, Map<string, ReturnType<typeof createTurns>>>();

/** One set of turns per pool and git binary in a process: every activity of the process queues on the same turns. */
export function repositoryTurns(pool: pg.Pool, gitOptions: GitOptions, watch?: LockHoldWatch) {
  let byBinary = perPool.get(pool);
  if (!byBinary) perPool.set(pool, (byBinary = new Map()));
  let turns = byBinary.get(gitOptions.binary);
  if (!turns) byBinary.set(gitOptions.binary, (turns = createTurns(pool, gitOptions, watch)));
  return turns;
}

/** `watch` reports a turn that holds the repository's lock past a minute (db/locks.ts). */
function createTurns(pool: pg.Pool, gitOptions: GitOptions, watch?: LockHoldWatch) {
  const waiting = new Map<string, { sourcePath: string; steps: Queued[] }>();

  function newTurn(sourcePath: string, steps: Queued[]): Turn {
    const git = gitAt(sourcePath, gitOptions);
    let found: Promise<Map<string, WorktreeEntry>> | null = null;
    let now: Promise<WorktreeEntry[]> | null = null;
    let nowByRealPath: Promise<Map<string, WorktreeEntry>> | null = null;
    // Real paths are read once a turn, while its folders still exist: a removed worktree's path
    // is then compared as it resolved before its removal (a symlink in the root included), and
    // the turn's second listing reads no path again.
    const realPaths = new Map<string, Promise<string>>();
    const realOf = (p: string) => {
      let real = realPaths.get(p);
      if (!real) realPaths.set(p, (real = realPathOrResolved(p)));
      return real;
    };
    const byRealPath = async (entries: WorktreeEntry[]) =>
      new Map(await Promise.all(entries.map(async (e) => [await realOf(e.path), e] as const)));
    const current = () => (now ??= listWorktrees(git));
    const deleted = new Set<string>();
    const readBranches = async (base: string, names: string[]) => {
      // The commits first, then what base contains: a branch that moved between the two reads
      // is judged on its newer tip, and its deletion (guarded by the older commit) fails.
      const commits = await branchCommits(git, names);
      // Not readable (no such base): every branch counts unmerged, so none is deleted.
      const merged =
        commits.size === 0
          ? new Set<string>()
          : await branchesMergedInto(git, base, [...commits.keys()]).catch(() => new Set<string>());
      return { commits, merged };
    };
    const branchesByBase = new Map<string, ReturnType<typeof readBranches>>();
    return {
      git,
      async registrationAt(worktreePath) {
        found ??= current().then(byRealPath);
        return (await found).get(await realOf(worktreePath)) ?? null;
      },
      current,
      async registeredNow(worktreePath) {
        const [registered, target] = await Promise.all([
          (nowByRealPath ??= current().then(byRealPath)),
          realOf(worktreePath),
        ]);
        return registered.has(target);
      },
      changed() {
        now = null;
        nowByRealPath = null;
      },
      async branch(name, base) {
        // The branches the turn's steps named for this base are read together; another on its own.
        const named = steps.flatMap((q) => (q.branch?.base === base ? [q.branch.name] : []));
        let read = named.includes(name) ? branchesByBase.get(base) : readBranches(base, [name]);
        if (!read) branchesByBase.set(base, (read = readBranches(base, [...new Set(named)])));
        const { commits, merged } = await read;
        const commit = deleted.has(name) ? null : (commits.get(name) ?? null);
        return { commit, merged: commit !== null && merged.has(name) };
      },
      branchDeleted(name) {
        deleted.add(name);
      },
    };
  }

  async function drain(repositoryId: string): Promise<void> {
    for (;;) {
      const entry = waiting.get(repositoryId);
      if (!entry || entry.steps.length === 0) {
        waiting.delete(repositoryId);
        return;
      }
      const steps = entry.steps.splice(0, MAX_STEPS_PER_TURN);
      const settled = new Set<Queued>();
      try {
        await withRepositoryLock(
          pool,
          repositoryId,
          async () => {
            const turn = newTurn(entry.sourcePath, steps);
            const done: { q: Queued; out: StepOutcome<unknown> }[] = [];
            for (const q of steps) {
              try {
                done.push({ q, out: await q.step(turn) });
              } catch (err) {
                settled.add(q);
                q.reject(err);
              }
            }
            // The checks after the turn read the registrations once, after every step's change.
            for (const { q, out } of done) {
              settled.add(q);
              try {
                if (out.afterTurn) await out.afterTurn(turn);
                q.resolve(out.value);
              } catch (err) {
                q.reject(err);
              }
            }
          },
          undefined,
          watch,
        );
      } catch (err) {
        // The lock itself failed (the database): every step not answered yet fails with it.
        for (const q of steps) if (!settled.has(q)) q.reject(err);
      }
    }
  }

  return {
    /** Runs `step` in the next turn of the repository's lock, with the other steps that wait for it; `branch`: the branch it reads (turn.branch). */
    inTurn<T>(
      repositoryId: string,
      sourcePath: string,
      step: (turn: Turn) => Promise<StepOutcome<T>>,
      branch?: BranchOfStep,
    ): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        let entry = waiting.get(repositoryId);
        const first = !entry;
        if (!entry) waiting.set(repositoryId, (entry = { sourcePath, steps: [] }));
        entry.steps.push({ step, resolve: resolve as (v: unknown) => void, reject, ...(branch ? { branch } : {}) });
        if (first) void drain(repositoryId);
      });
    },
  };
}

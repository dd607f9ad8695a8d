/**
 * The executors, registered once: adding one is a folder under executors/ and one line here.
 * Which executor a plan or a record is, is decided in domain/launch-plan.ts alone; callers ask
 * the registry for that executor and call the interface (executors/executor.ts).
 */
import { executorOfPlan, executorOfRecord } from '../domain/launch-plan';
import type { LaunchPlan } from '../domain/launch';
import { containerExecutor } from './container';
import type { Executor, ExecutorKind } from './executor';
import { hostOperations } from './host';
import { localExecutor } from './local';
import { sshExecutor } from './ssh';
import type { ActivityDeps } from './support/deps';
import { worktreeExecutor } from './worktree';

export interface Executors {
  of(kind: ExecutorKind): Executor;
  forPlan(plan: Pick<LaunchPlan, 'executorType'>): Executor;
  /** The executor whose place holds a record (it names its SSH target, or it is on a host; an agent's start names `container`). */
  at(record: { sshTargetId?: string | null; executorType?: ExecutorKind }): Executor;
  /** Each distinct implementation of one operation (worktree and local share their host ones): for steps that ask every place. */
  distinct<K extends keyof Executor>(operation: K): Executor[K][];
  /** Items grouped by the executor that holds each, in the order the registry lists the executors. */
  grouped<T extends { sshTargetId?: string | null }>(items: T[]): [Executor, T[]][];
}

function createExecutors(deps: ActivityDeps): Executors {
  const host = hostOperations(deps);
  const registered: Executor[] = [
    worktreeExecutor(deps, host),
    localExecutor(deps, host),
    sshExecutor(deps),
    containerExecutor(deps, host),
  ];
  const byKind = new Map(registered.map((e) => [e.kind, e]));
  const of = (kind: ExecutorKind): Executor => {
    const executor = byKind.get(kind);
    if (!executor) throw new Error('no executor is registered for this kind');
    return executor;
  };
  return {
    of,
    forPlan: (plan) => of(executorOfPlan(plan)),
    at: (record) => of(executorOfRecord(record)),
    distinct: (operation) => [...new Set(registered.map((e) => e[operation]))],
    grouped(items) {
      const groups = new Map<Executor, (typeof items)[number][]>();
      for (const item of items) {
        const executor = of(executorOfRecord(item));
        groups.set(executor, [...(groups.get(executor) ?? []), item]);
      }
      return registered.filter((e) => groups.has(e)).map((e) => [e, groups.get(e)!]);
    },
  };
}

const perDeps = new WeakMap<ActivityDeps, Executors>();

/** One registry per set of dependencies (a worker's, a gateway's, a test's). */
export function executorsOf(deps: ActivityDeps): Executors {
  let executors = perDeps.get(deps);
  if (!executors) perDeps.set(deps, (executors = createExecutors(deps)));
  return executors;
}

/** After a restart, and periodically: every executor's agents of this host recorded running whose process is gone get their outcome. */
export async function recoverAgents(
  deps: ActivityDeps,
  hostId: string,
): Promise<{ alive: number; exited: number; vanished: number }> {
  const counts = { alive: 0, exited: 0, vanished: 0 };
  for (const recover of executorsOf(deps).distinct('recoverAgents')) {
    const found = await recover(hostId);
    counts.alive += found.alive;
    counts.exited += found.exited;
    counts.vanished += found.vanished;
  }
  return counts;
}

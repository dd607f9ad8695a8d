/**
 * The floor: the work a launch or a cleanup must do, executed directly in this process without
 * Temporal or HTTP, git run as plain processes (no wrapper library):
 * - attach: admission (the product's db/admission.ts, so exactly its statements) → the same
 *   read-only validation (`git worktree list --porcelain`, lstat, the marker) → the agent spawn
 *   as activities/agent-process.ts does it → its execution row → session running, in ONE
 *   transaction (so the barrier re-checks the product makes between its separate transactions
 *   are not needed here);
 * - materialize: admission (election) → `git worktree add --no-track -b <branch> <path> <base>`
 *   per repository → publish inventory + ready (db/environments.ts) → spawn → running, in one
 *   transaction;
 * - resume: admitResume → the same validation → the stop of the session's running agent (the
 *   product's stopRecordedAgent) → spawn → running, in one transaction;
 * - ssh attach: the attach's statements → the product's own remote scripts (the read-only facts,
 *   the detached start) over this process's one pooled SSH connection to the target;
 * - container attach: the attach's statements → the same validation → the container's row → the
 *   engine's own `podman exec -d` of the agent's command in the running container;
 * - removal: plain `git worktree remove`, serialized per repository as git requires (concurrent
 *   removals in one repository race on its admin files), repositories in parallel.
 * Each call reports how long its parts took, for the profile.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { stopRecordedAgent } from '../executors/host/agents';
import { admitResume } from '../db/admission';
import { publishReady } from '../db/environments';
import type { IncomingInventoryRow } from '../db/inventory';
import { loadConfig, type Config } from '../domain/config';
import { publishedPlan } from '../domain/launch';
import { OWNERSHIP_MARKER_FILE, type OwnershipMarker } from '../domain/task-layout';
import { containerAttachFloor } from './floor-container-attach';
import { sshAttachOnFloor } from './floor-ssh-attach';
import { admit, git, inOneTransaction, launchRequest, startAgent, validate, type FloorPhases } from './floor-steps';

/** activities/agent-process.ts: variables an agent never inherits. */

export interface Floor {
  attach(taskId: string): Promise<FloorPhases>;
  materialize(
    taskId: string,
    baseCommits: Map<string, string>,
    gitTurn?: <T>(repoPath: string, fn: () => Promise<T>) => Promise<T>,
  ): Promise<FloorPhases>;
  /**
   * An attach of an ssh workspace: the attach's statements (and the target's row), the product's
   * own remote commands over this process's one pooled connection to the target: the read-only
   * facts (`readRemoteWorkspace`) and the detached start (`startRemoteAgent`).
   */
  sshAttach(taskId: string, sshTargetId: string): Promise<FloorPhases>;
  /**
   * An attach of a container workspace: the attach's statements, the same validation, the
   * environment's container row, then the engine's own way to run the agent's command in that
   * running container: `podman exec -d --user <its uid> --workdir <workspace>` as a plain process.
   */
  containerAttach(taskId: string): Promise<FloorPhases>;
  /** A resume of an existing session: admitResume, the same validation, the stop of its running agent, the spawn. */
  resume(sessionId: string): Promise<FloorPhases>;
  removeWorktrees(worktrees: { repoPath: string; worktreePath: string }[]): Promise<void>;
}

/** The worktree's admin id, from the `.git` file git writes into it (`gitdir: …/worktrees/<id>`). */
async function worktreeIdOf(worktreePath: string): Promise<string> {
  const match = /\/worktrees\/([^/\s]+)\s*$/.exec(await readFile(path.join(worktreePath, '.git'), 'utf8'));
  if (!match) throw new Error('floor: not a linked worktree');
  return match[1]!;
}

export function createFloor(opts: { pool: pg.Pool; productWorkspaceRoot: string; floorDataDir: string }): Floor {
  const config: Config = loadConfig(
    { TWS_DATA_DIR: opts.floorDataDir, TWS_HOST_ID: 'bench' },
    { cwd: opts.floorDataDir, hostname: 'bench' },
  );
  const containerAttach = containerAttachFloor(opts.pool, config, opts.productWorkspaceRoot);

  return {
    attach(taskId) {
      return inOneTransaction(opts.pool, async (client, part) => {
        const plan = await part('sql', () =>
          admit(client, launchRequest(taskId), opts.productWorkspaceRoot, 'attached'),
        );
        await part('git', () => validate(plan));
        await startAgent(client, config, plan, part);
      });
    },

    sshAttach(taskId, sshTargetId) {
      return sshAttachOnFloor(opts.pool, config, opts.productWorkspaceRoot, taskId, sshTargetId);
    },

    containerAttach,

    resume(sessionId) {
      return inOneTransaction(opts.pool, async (client, part) => {
        const outcome = await part('sql', () =>
          admitResume(
            client,
            { sessionId, runId: randomUUID(), hostId: 'bench' },
            { newEnvironmentId: randomUUID() },
            opts.productWorkspaceRoot,
          ),
        );
        if (outcome.kind !== 'admitted') throw new Error(`floor resume refused: ${outcome.code}`);
        const plan = outcome.plan;
        await part('git', () => validate(plan));
        const running = await part(
          'sql',
          async () =>
            (
              await client.query<{ id: string; pid: number; process_start_time: string }>(
                `SELECT id, pid, process_start_time FROM executions WHERE session_id = $1 AND status = 'running'`,
                [sessionId],
              )
            ).rows,
        );
        for (const exec of running) {
          const stopped = await part('stop', () =>
            stopRecordedAgent(
              client,
              { executionId: exec.id, pid: exec.pid, processStartTime: exec.process_start_time },
              config.agentStopGraceMs,
            ),
          );
          if (!stopped) throw new Error('floor: the previous agent did not stop');
        }
        await startAgent(client, config, plan, part, ['starting', 'running', 'stopped', 'exited', 'failed']);
      });
    },

    materialize(taskId, baseCommits, gitTurn = (_repo, fn) => fn()) {
      return inOneTransaction(opts.pool, async (client, part) => {
        const plan = await part('sql', () =>
          admit(client, launchRequest(taskId), config.workspaceRoot, 'materialized'),
        );
        await part('fs', async () => {
          await mkdir(plan.taskFolder, { recursive: true });
          const marker: OwnershipMarker = {
            kind: 'task-workspaces/ownership',
            taskId: plan.environmentTaskId,
            environmentId: plan.environmentId,
          };
          await writeFile(path.join(plan.taskFolder, OWNERSHIP_MARKER_FILE), JSON.stringify(marker, null, 2) + '\n');
        });
        const rows: IncomingInventoryRow[] = [];
        for (const slot of plan.slots) {
          await part('git', () =>
            gitTurn(slot.sourcePath, () =>
              git(slot.sourcePath, [
                'worktree',
                'add',
                '--no-track',
                '-b',
                slot.branch,
                slot.worktreePath,
                slot.baseBranch,
              ]),
            ),
          );
          rows.push({
            id: randomUUID(),
            repositoryId: slot.repositoryId,
            branchSlug: slot.branchSlug,
            executorType: plan.executorType,
            identity: {
              worktreeId: await part('fs', () => worktreeIdOf(slot.worktreePath)),
              worktreePath: slot.worktreePath,
              worktreeBranch: slot.branch,
            },
            headCommit: baseCommits.get(slot.sourcePath) ?? null,
            position: slot.position,
            error: null,
          });
        }
        const published = await part('sql', () =>
          publishReady(client, plan.environmentId, plan.sessionId, plan.workspacePath, plan.taskFolder, rows),
        );
        if (!published) throw new Error('floor: publish refused');
        const made = rows.map((r) => ({
          repositoryId: r.repositoryId,
          worktreeId: r.identity!.worktreeId,
          worktreePath: r.identity!.worktreePath!,
          branch: r.identity!.worktreeBranch!,
        }));
        await startAgent(client, config, publishedPlan(plan, made), part);
      });
    },

    async removeWorktrees(worktrees) {
      const byRepo = new Map<string, string[]>();
      for (const w of worktrees) byRepo.set(w.repoPath, [...(byRepo.get(w.repoPath) ?? []), w.worktreePath]);
      await Promise.all(
        [...byRepo].map(async ([repoPath, paths]) => {
          for (const p of paths) await git(repoPath, ['worktree', 'remove', p]);
        }),
      );
    },
  };
}

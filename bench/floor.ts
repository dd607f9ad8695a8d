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
 * - removal: plain `git worktree remove`, serialized per repository as git requires (concurrent
 *   removals in one repository race on its admin files), repositories in parallel.
 * Each call reports how long its parts took, for the profile.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type pg from 'pg';
import { spawnDetached, stopRecordedAgent } from '../executors/host/agents';
import { processStartTime } from '../executors/host/process-identity';
import { isRealDirectory, markerOwnedBy, readMarker } from '../executors/host/workspace-fs';
import { remoteAgentEnvironment, remoteRunFiles } from '../executors/ssh/agents';
import { loadSshTarget, markerNames } from '../executors/ssh/workspace';
import { startRemoteAgent } from '../ssh/remote-agent';
import { readRemoteWorkspace } from '../ssh/remote-workspace';
import { admitLaunch, admitResume } from '../db/admission';
import { publishReady, type IncomingInventoryRow } from '../db/environments';
import { insertExecution } from '../db/executions';
import { moveSessionState } from '../db/sessions';
import { loadConfig, type Config } from '../domain/config';
import { agentStartOf, type LaunchPlan, type LaunchRequest } from '../domain/launch';
import { OWNERSHIP_MARKER_FILE, type OwnershipMarker } from '../domain/task-layout';
import { parseWorktreeList } from '../git/git';
import { AGENT_COMMAND } from './api';

/** activities/agent-process.ts: variables an agent never inherits. */

const execFileAsync = promisify(execFile);
const git = async (cwd: string, args: string[]): Promise<string> =>
  (await execFileAsync('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 })).stdout;

/** Milliseconds per part of one floor call: sql (statements and commit), git, spawn, fs. */
export type FloorPhases = Record<string, number>;

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
  /** A resume of an existing session: admitResume, the same validation, the stop of its running agent, the spawn. */
  resume(sessionId: string): Promise<FloorPhases>;
  removeWorktrees(worktrees: { repoPath: string; worktreePath: string }[]): Promise<void>;
}

export function createFloor(opts: { pool: pg.Pool; productWorkspaceRoot: string; floorDataDir: string }): Floor {
  const config: Config = loadConfig(
    { TWS_DATA_DIR: opts.floorDataDir, TWS_HOST_ID: 'bench' },
    { cwd: opts.floorDataDir, hostname: 'bench' },
  );

  const request = (taskId: string): LaunchRequest => ({
    sessionId: randomUUID(),
    taskId,
    executorType: 'worktree',
    agentProfile: 'shell',
    command: AGENT_COMMAND,
    name: null,
    hostId: 'bench',
  });

  /** One transaction around fn; `part` times a piece of it under a name. */
  async function inOneTransaction(
    fn: (client: pg.PoolClient, part: <T>(name: string, p: () => Promise<T>) => Promise<T>) => Promise<void>,
  ): Promise<FloorPhases> {
    const phases: FloorPhases = {};
    const part = async <T>(name: string, p: () => Promise<T>): Promise<T> => {
      const start = performance.now();
      try {
        return await p();
      } finally {
        phases[name] = (phases[name] ?? 0) + performance.now() - start;
      }
    };
    const client = await part('sql', () => opts.pool.connect());
    try {
      await part('sql', () => client.query('BEGIN'));
      await fn(client, part);
      await part('sql', () => client.query('COMMIT'));
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
    return phases;
  }

  async function admit(
    client: pg.PoolClient,
    req: LaunchRequest,
    workspaceRoot: string,
    role: LaunchPlan['role'],
  ): Promise<LaunchPlan> {
    const outcome = await admitLaunch(client, req, { newEnvironmentId: randomUUID() }, workspaceRoot);
    if (outcome.kind !== 'admitted') throw new Error(`floor admission refused: ${outcome.code}`);
    if (outcome.plan.role !== role) throw new Error(`floor admission: ${outcome.plan.role}, expected ${role}`);
    return outcome.plan;
  }

  /** The checks of activities/workspace-validate.ts for a worktree slot, with one plain git process. */
  async function validate(plan: LaunchPlan): Promise<void> {
    if (!(await isRealDirectory(plan.workspacePath))) throw new Error('floor: workspace is not a directory');
    for (const slot of plan.slots) {
      const rec = slot.recorded;
      if (!rec?.worktreeId || !rec.worktreePath || !rec.worktreeBranch) throw new Error('floor: identity missing');
      if (!(await isRealDirectory(rec.worktreePath))) throw new Error('floor: not a directory');
      const real = await realpath(rec.worktreePath);
      const entry = parseWorktreeList(await git(slot.sourcePath, ['worktree', 'list', '--porcelain'])).find(
        (e) => e.path === real,
      );
      if (!entry || entry.prunable || entry.branch !== rec.worktreeBranch)
        throw new Error('floor: not registered on the recorded branch');
      const marker = await readMarker(plan.taskFolder);
      if (!markerOwnedBy(marker, plan.environmentTaskId)) throw new Error('floor: marker mismatch');
    }
  }

  /** The agent start of activities/agent-process.ts, the same function: log folder, the shim (and the sandbox where it runs), /proc/<pid>/stat. */
  async function spawnAgent(
    plan: LaunchPlan,
    executionId: string,
  ): Promise<{ pid: number; startTime: string | null; logPath: string }> {
    const logDir = path.join(config.logDir, plan.taskId, plan.sessionId);
    await mkdir(logDir, { recursive: true });
    const logPath = path.join(logDir, `${executionId}.log`);
    const pid = await spawnDetached(agentStartOf(plan, AGENT_COMMAND, executionId), logPath, config, () => {});
    return { pid, startTime: await processStartTime(pid), logPath };
  }

  async function startAgent(
    client: pg.PoolClient,
    plan: LaunchPlan,
    part: <T>(name: string, p: () => Promise<T>) => Promise<T>,
    from: string[] = ['starting'],
  ): Promise<void> {
    const executionId = randomUUID();
    const agent = await part('spawn', () => spawnAgent(plan, executionId));
    await part('sql', async () => {
      await insertExecution(client, {
        id: executionId,
        session_id: plan.sessionId,
        host_id: config.hostId,
        pid: agent.pid,
        process_start_time: agent.startTime ?? 'exited-before-identified',
        cwd: plan.workspacePath,
        log_path: agent.logPath,
        status: agent.startTime ? 'running' : 'exited',
      });
      if (!(await moveSessionState(client, plan.sessionId, from as Parameters<typeof moveSessionState>[2], 'running')))
        throw new Error('floor: session did not move to running');
    });
  }

  /** The worktree's admin id, from the `.git` file git writes into it (`gitdir: …/worktrees/<id>`). */
  async function worktreeIdOf(worktreePath: string): Promise<string> {
    const match = /\/worktrees\/([^/\s]+)\s*$/.exec(await readFile(path.join(worktreePath, '.git'), 'utf8'));
    if (!match) throw new Error('floor: not a linked worktree');
    return match[1]!;
  }

  return {
    attach(taskId) {
      return inOneTransaction(async (client, part) => {
        const plan = await part('sql', () => admit(client, request(taskId), opts.productWorkspaceRoot, 'attached'));
        await part('git', () => validate(plan));
        await startAgent(client, plan, part);
      });
    },

    sshAttach(taskId, sshTargetId) {
      return inOneTransaction(async (client, part) => {
        const plan = await part('sql', () =>
          admit(
            client,
            { ...request(taskId), executorType: 'ssh', sshTargetId },
            opts.productWorkspaceRoot,
            'attached',
          ),
        );
        const target = await part('sql', () => loadSshTarget(client, plan.sshTargetId));
        const recorded = plan.slots.map((slot) => slot.recorded);
        if (recorded.some((r) => !r?.worktreePath || !r.worktreeBranch)) throw new Error('floor: identity missing');
        const facts = await part('ssh read', () =>
          readRemoteWorkspace(target, {
            taskFolder: plan.taskFolder,
            workspacePath: plan.workspacePath,
            repoPaths: recorded.map((r) => r!.worktreePath!),
            withDirty: false,
          }),
        );
        if (
          !facts.workspaceIsRealDirectory ||
          facts.slots.some(
            (f, i) =>
              !f.realDirectory || f.toplevel !== recorded[i]!.worktreePath || f.branch !== recorded[i]!.worktreeBranch,
          )
        )
          throw new Error('floor: remote workspace not as recorded');
        if (!markerNames(facts.marker, plan.environmentTaskId)) throw new Error('floor: remote marker mismatch');
        const executionId = randomUUID();
        const input = agentStartOf(plan, AGENT_COMMAND, executionId);
        const files = remoteRunFiles(target, input);
        const agent = await part('ssh start', () =>
          startRemoteAgent(target, {
            cwd: input.cwd,
            logPath: files.logPath,
            statusPath: files.statusPath,
            promptPath: files.promptPath,
            prompt: null,
            env: remoteAgentEnvironment(input),
            argv: input.command,
          }),
        );
        if ('notStartable' in agent) throw new Error('floor: remote agent not startable');
        await part('sql', async () => {
          await insertExecution(client, {
            id: executionId,
            session_id: plan.sessionId,
            host_id: config.hostId,
            pid: agent.pid,
            process_start_time: agent.startTime,
            cwd: input.cwd,
            log_path: files.logPath,
            status: 'running',
            ssh_target_id: target.id,
          });
          if (!(await moveSessionState(client, plan.sessionId, ['starting'], 'running')))
            throw new Error('floor: session did not move to running');
        });
      });
    },

    resume(sessionId) {
      return inOneTransaction(async (client, part) => {
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
        await startAgent(client, plan, part, ['starting', 'running', 'stopped', 'exited', 'failed']);
      });
    },

    materialize(taskId, baseCommits, gitTurn = (_repo, fn) => fn()) {
      return inOneTransaction(async (client, part) => {
        const plan = await part('sql', () => admit(client, request(taskId), config.workspaceRoot, 'materialized'));
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
        await startAgent(client, plan, part);
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

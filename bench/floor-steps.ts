/**
 * The steps the floor's calls (bench/floor.ts) are made of: one transaction timed by part, the
 * product's admission, the read-only validation and the agent start. Apart from the calls so
 * that each call reads as its sequence of steps, and the ssh attach (floor-ssh-attach.ts) can
 * share them.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type pg from 'pg';
import { spawnDetached } from '../executors/host/agent-spawn';
import { agentUid } from '../executors/host/agent-uid';
import { isRealDirectory, markerOwnedBy, readMarker } from '../executors/host/workspace-fs';
import { admitLaunch } from '../db/admission';
import { insertExecution } from '../db/executions';
import { moveSessionState } from '../db/sessions';
import type { Config } from '../domain/config';
import { agentStartOf, type LaunchPlan, type LaunchRequest } from '../domain/launch';
import { parseWorktreeList } from '../git/worktrees';
import { AGENT_COMMAND } from './api';

const execFileAsync = promisify(execFile);
/** git as a plain process, no wrapper library: the floor's git is what git itself costs. */
export const git = async (cwd: string, args: string[]): Promise<string> =>
  (await execFileAsync('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 })).stdout;

/** Milliseconds per part of one floor call: sql (statements and commit), git, spawn, fs. */
export type FloorPhases = Record<string, number>;

/** Runs a piece of a floor call and adds its time to the phase of that name. */
type Part = <T>(name: string, p: () => Promise<T>) => Promise<T>;

/** The launch request of a floor call for a task (a new session, the bench's host). */
export const launchRequest = (taskId: string): LaunchRequest => ({
  sessionId: randomUUID(),
  taskId,
  executorType: 'worktree',
  agentProfile: 'shell',
  command: AGENT_COMMAND,
  name: null,
  hostId: 'bench',
});

/** One transaction around fn; `part` times a piece of it under a name. */
export async function inOneTransaction(
  pool: pg.Pool,
  fn: (client: pg.PoolClient, part: Part) => Promise<void>,
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
  const client = await part('sql', () => pool.connect());
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

export async function admit(
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
export async function validate(plan: LaunchPlan): Promise<void> {
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
  client: pg.PoolClient,
  config: Config,
  plan: LaunchPlan,
  executionId: string,
): Promise<{ pid: number; startTime: string | null; logPath: string }> {
  const input = agentStartOf(plan, AGENT_COMMAND, executionId);
  const uid = await agentUid({ pool: client, config }, input);
  const logDir = path.join(config.logDir, plan.taskId, plan.sessionId);
  await mkdir(logDir, { recursive: true });
  const logPath = path.join(logDir, `${executionId}.log`);
  const { pid, startTime } = await spawnDetached(input, logPath, config, () => {}, uid);
  return { pid, startTime, logPath };
}

export async function startAgent(
  client: pg.PoolClient,
  config: Config,
  plan: LaunchPlan,
  part: Part,
  from: string[] = ['starting'],
): Promise<void> {
  const executionId = randomUUID();
  const agent = await part('spawn', () => spawnAgent(client, config, plan, executionId));
  await part('sql', async () => {
    await insertExecution(client, {
      id: executionId,
      session_id: plan.sessionId,
      host_id: config.hostId,
      pid: agent.pid,
      process_start_time: agent.startTime ?? 'exited-before-identified',
      cwd: plan.workspacePath,
      log_path: agent.logPath,
      status: 'running', // as the service records it: an end is collected, never presumed
    });
    if (!(await moveSessionState(client, plan.sessionId, from as Parameters<typeof moveSessionState>[2], 'running')))
      throw new Error('floor: session did not move to running');
  });
}

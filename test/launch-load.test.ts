/** Concurrency under load: elections stay single, git admin races are serialized per repository. */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import pino from 'pino';
import { workspaceMaterializeActivities } from '../activities/workspace-materialize';
import type { LaunchPlan } from '../domain/launch';
import { materializeSlots } from '../domain/launch-plan';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName, taskFolder } from '../domain/task-layout';
import { createHarness, type Harness } from './support/harness';
import { createTask, launch, registerRepo } from './support/scenario';
import { branches, listDir, makeRepo, worktreePaths } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe('concurrency and load', () => {
  it('20 simultaneous first launches on one new task: one materialization, every other attaches or is told workspace_preparing, nothing orphaned', async () => {
    const repo = makeRepo(h.scratch, 'crowd');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'crowd')]);
    const results = await Promise.all(Array.from({ length: 20 }, () => launch(h, taskId)));
    const ok = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status !== 201);
    expect(ok.filter((r) => r.body.role === 'materialized')).toHaveLength(1);
    expect(ok.every((r) => r.body.role === 'materialized' || r.body.role === 'attached')).toBe(true);
    for (const r of refused) {
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('workspace_preparing');
    }
    const env = (await h.pool.query('SELECT id, status FROM task_environments WHERE task_id = $1', [taskId])).rows;
    expect(env).toEqual([{ id: ok[0]!.body.taskEnvironmentId, status: 'ready' }]);
    expect(new Set(ok.map((r) => r.body.taskEnvironmentId)).size).toBe(1);
    const sessions = (await h.pool.query('SELECT id, state FROM sessions WHERE task_id = $1', [taskId])).rows;
    expect(sessions.map((s) => s.id).sort()).toEqual(ok.map((r) => r.body.sessionId).sort());
    expect(sessions.every((s) => s.state === 'running')).toBe(true);
    expect(
      Number(
        (
          await h.pool.query(
            'SELECT count(*) FROM executions x JOIN sessions s ON s.id = x.session_id WHERE s.task_id = $1',
            [taskId],
          )
        ).rows[0].count,
      ),
    ).toBe(ok.length);
    expect(
      Number(
        (await h.pool.query('SELECT count(*) FROM environment_repos WHERE environment_id = $1', [env[0].id])).rows[0]
          .count,
      ),
    ).toBe(1);
    expect(worktreePaths(repo)).toEqual([repo, path.join(h.config.workspaceRoot, taskDirName(taskId), 'crowd')]);
    expect(listDir(h.config.workspaceRoot)).toEqual([taskDirName(taskId)]);
  });

  it('20 tasks on the same repository launched simultaneously all succeed (no config.lock races)', async () => {
    const repo = makeRepo(h.scratch, 'shared-repo');
    const repoId = await registerRepo(h, repo, 'shared-repo');
    const tasks = await Promise.all(Array.from({ length: 20 }, () => createTask(h, [repoId])));
    const results = await Promise.all(tasks.map((t) => launch(h, t)));
    for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(results.every((r) => r.body.role === 'materialized')).toBe(true);
    expect(worktreePaths(repo)).toHaveLength(21);
    expect(branches(repo)).toEqual(['main', ...tasks.map(taskBranchName)].sort());
    for (const t of tasks)
      expect(worktreePaths(repo)).toContain(path.join(h.config.workspaceRoot, taskDirName(t), 'shared-repo'));
  });
});

describe('the per-repository lock', () => {
  it('20 materializations on one repository at the same instant all succeed: git admin operations are serialized', async () => {
    const repo = makeRepo(h.scratch, 'instant');
    const repoId = await registerRepo(h, repo, 'instant');
    const materialize = workspaceMaterializeActivities({
      pool: h.pool,
      config: h.config,
      logger: pino({ level: 'silent' }),
    }).materializeWorkspace;
    const plans: LaunchPlan[] = Array.from({ length: 20 }, () => {
      const taskId = randomUUID();
      const slots = materializeSlots(
        [
          {
            repositoryId: repoId,
            repositoryName: 'instant',
            repositoryPath: repo,
            position: 0,
            baseBranch: 'main',
            checkoutBranch: null,
            branchSlug: taskBranchName(taskId),
          },
        ],
        'worktree',
        taskFolder(h.config.workspaceRoot, taskId),
      );
      return {
        role: 'materialized',
        sessionId: randomUUID(),
        taskId,
        environmentId: randomUUID(),
        environmentTaskId: taskId,
        executorType: 'worktree',
        hostId: h.config.hostId,
        workspacePath: slots[0]!.worktreePath,
        taskFolder: taskFolder(h.config.workspaceRoot, taskId),
        slots,
      };
    });
    const outcomes = await Promise.allSettled(plans.map((plan) => materialize(plan)));
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    expect(worktreePaths(repo)).toHaveLength(21);
    expect(branches(repo)).toHaveLength(21);
  });
});

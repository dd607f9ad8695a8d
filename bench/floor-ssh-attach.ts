/**
 * The floor of an ssh attach (bench/floor.ts's sshAttach): the attach's statements, then the
 * product's own remote commands over this process's one pooled connection to the target. Its
 * own file because it reaches the target through the product's ssh layer, not local processes.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { remoteAgentEnvironment, remoteRunFiles } from '../executors/ssh/agents';
import { loadSshTarget, markerNames } from '../executors/ssh/workspace';
import { startRemoteAgent } from '../ssh/remote-agent';
import { readRemoteWorkspace } from '../ssh/remote-workspace';
import { insertExecution } from '../db/executions';
import { moveSessionState } from '../db/sessions';
import type { Config } from '../domain/config';
import { agentStartOf } from '../domain/launch';
import { AGENT_COMMAND } from './api';
import { admit, inOneTransaction, launchRequest, type FloorPhases } from './floor-steps';

/** An attach of an ssh workspace, in one transaction; see Floor.sshAttach. */
export function sshAttachOnFloor(
  pool: pg.Pool,
  config: Config,
  productWorkspaceRoot: string,
  taskId: string,
  sshTargetId: string,
): Promise<FloorPhases> {
  return inOneTransaction(pool, async (client, part) => {
    const plan = await part('sql', () =>
      admit(client, { ...launchRequest(taskId), executorType: 'ssh', sshTargetId }, productWorkspaceRoot, 'attached'),
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
}

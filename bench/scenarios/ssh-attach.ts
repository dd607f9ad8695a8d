/**
 * SSH attach: a real OpenSSH sshd on 127.0.0.1 (test/support/ssh-server.ts, the
 * binary `make setup` unpacks), registered as an SSH target by an operator; tasks get an ssh
 * workspace with a first launch (a clone on the target), then attach launches are timed against
 * the ssh floor (the attach's statements and the product's own remote commands, read-only facts
 * and detached start, over this process's one pooled connection) and the engine floor of the
 * attach's shape, interleaved. The remote agents are local processes here: killed afterwards.
 */
import { launchWorkflowId } from '../../domain/workflow-ids';
import { loadSshTarget } from '../../executors/ssh/workspace';
import { closeSshConnections } from '../../ssh/connection';
import { runRemote } from '../../ssh/remote-exec';
import { startSshServer } from '../../test/support/ssh-server';
import { AGENT_COMMAND, Api, errorCode } from '../api';
import type { BenchContext } from '../context';
import { shapeOfWorkflow } from '../engine-floor';
import { profileOfLaunch, type HistoryProfile } from '../history';
import { elapsedMs, median, round, type LaunchComparison } from '../stats';
import { compared, interleaved } from '../interleave';
import { createTasks, killAgents, makeRepo } from '../world';

export interface SshAttachResult extends LaunchComparison {
  tasks: number;
  /** One empty remote script (`:`) over the pooled connection, p50: what the target's login shell and the channel cost every command. */
  emptyCommandMs: number;
  profile: HistoryProfile | null;
}

export async function runSshAttach(ctx: BenchContext): Promise<SshAttachResult> {
  const { api, floor, config } = ctx;
  const { samples, block, warmup, tasks: taskCount } = config.ssh;
  const server = await startSshServer();
  try {
    const operator = new Api(ctx.services.apiBase, ctx.services.tokens.operator);
    const registered = await operator.call<{ id: string }>('POST', '/v1/ssh-targets', {
      name: 'bench-ssh',
      host: server.host,
      port: server.port,
      user: server.user,
      privateKeyPath: server.privateKeyPath,
      knownHosts: server.knownHostsLine,
      workspaceRoot: server.workspaceRoot,
    });
    if (registered.status !== 201)
      throw new Error(
        `registering the ssh target: ${registered.status} ${JSON.stringify(registered.body).slice(0, 300)}`,
      );
    const sshTargetId = registered.body.id;
    const body = { executorType: 'ssh', sshTargetId, agentProfile: 'shell', command: AGENT_COMMAND };
    const launch = (taskId: string) =>
      api.call<{ sessionId: string; role: string }>('POST', `/v1/tasks/${taskId}/sessions`, body);

    const repo = await makeRepo(api, ctx.reposDir, 'ssh', config.repoFiles);
    const tasks = await createTasks(api, taskCount, [repo], 'ssh');
    for (const t of tasks) {
      const res = await launch(t);
      if (res.status !== 201 || res.body.role !== 'materialized')
        throw new Error(`ssh first launch: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    let turn = 0;
    const nextTask = () => tasks[turn++ % tasks.length]!;
    let last = '';
    for (let i = 0; i < warmup; i++) {
      const res = await launch(nextTask());
      if (res.status !== 201 || res.body.role !== 'attached')
        throw new Error(`ssh attach warm-up: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      last = res.body.sessionId;
      await floor.sshAttach(nextTask(), sshTargetId);
    }
    const shape = await shapeOfWorkflow(ctx.temporal, launchWorkflowId(last));
    const target = await loadSshTarget(ctx.pool, sshTargetId);
    const empty: number[] = [];
    for (let i = 0; i < 10; i++) {
      const start = performance.now();
      await runRemote(target, ':', []);
      empty.push(elapsedMs(start));
    }

    const samplesOf = await interleaved(
      ctx,
      { samples, block, label: 'ssh attach' },
      {
        product: async () => {
          const res = await launch(nextTask());
          return res.status === 201 && res.body.role === 'attached'
            ? { ms: res.ms, sessionId: res.body.sessionId }
            : { failure: errorCode(res) };
        },
        floor: () => floor.sshAttach(nextTask(), sshTargetId),
        engine: () => ctx.engine.time(shape),
      },
    );
    const { nearest, report } = compared(samplesOf, shape);
    return {
      tasks: tasks.length,
      emptyCommandMs: round(median(empty)),
      ...report,
      profile: await profileOfLaunch(ctx.temporal, ctx.services, nearest),
    };
  } finally {
    // The remote agents run on this machine: killed by pid and start time like the local ones.
    await killAgents(ctx.pool);
    // Then the worker's periodic check records them ended; only then does sshd go, so no session
    // of that check is SIGKILLed half way (a login shell killed in its rc files can leave locks behind).
    for (let i = 0; i < 100; i++) {
      const { rows } = await ctx.pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM executions WHERE ssh_target_id IS NOT NULL AND status = 'running'`,
      );
      if (rows[0]!.n === '0') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await new Promise((r) => setTimeout(r, 1000));
    await closeSshConnections();
    await server.remove();
  }
}

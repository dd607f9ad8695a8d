/**
 * Where a launch or resume runs: on the host of the task's repositories (a resume: where its
 * environment is), or this gateway's own host when nothing says otherwise. A host whose record
 * is not live is refused `host_unavailable` before anything is started, so no election happens
 * for a workspace nobody can make. The gateway's own host, when it runs that host's launches
 * itself, needs no worker there to take them.
 */
import { environmentHostOfSession, hostLiveness, taskHost } from '../../db/hosts';
import { ApiError } from './api-error';
import type { GatewayContext } from './context';

export async function launchHost(ctx: GatewayContext, target: { taskId: string; sessionId?: string }): Promise<string> {
  const hostId = (target.sessionId ? await environmentHostOfSession(ctx.pool, target.sessionId) : null) ?? (await taskHost(ctx.pool, target.taskId)) ?? ctx.config.hostId;
  const runsHere = hostId === ctx.config.hostId && ctx.config.gatewayRunsLaunches;
  if (!runsHere && (await hostLiveness(ctx.pool, hostId)) === 'down') throw new ApiError('host_unavailable');
  return hostId;
}

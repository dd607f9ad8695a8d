/**
 * Where a launch or resume runs: on the host of the task's repositories (a resume: where its
 * environment is), or this gateway's own host when nothing says otherwise. A host whose record
 * is not live is refused `host_unavailable` before anything is started, so no election happens
 * for a workspace nobody can make. The gateway's own host, when it runs that host's launches
 * itself, needs no worker there to take them.
 */
import { environmentHostOfSession, hostLiveness, taskHost } from '../../db/hosts';
import { checkRepository, type RepositoryCheck, type RepositoryCheckInput } from '../../git/repository-check';
import { checkRepositoryOn } from './engine/engine-hosts';
import { ApiError } from './api-error';
import type { GatewayContext } from './context';

export async function launchHost(ctx: GatewayContext, target: { taskId: string; sessionId?: string }): Promise<string> {
  const hostId =
    (target.sessionId ? await environmentHostOfSession(ctx.pool, target.sessionId) : null) ??
    (await taskHost(ctx.pool, target.taskId)) ??
    ctx.config.hostId;
  const runsHere = hostId === ctx.config.hostId && ctx.config.gatewayRunsLaunches;
  if (!runsHere && (await hostLiveness(ctx.pool, hostId)) === 'down') throw new ApiError('host_unavailable');
  return hostId;
}

/**
 * A repository's checks (path, top level, the branch given as `defaultBranch` exists), on the host
 * that holds it, through its queue; the gateway that runs that host's launches is that host's own
 * process (same host id, same machine): it checks here. A host that does not answer:
 * `host_unavailable`.
 */
export async function checkRepositoryOnItsHost(
  ctx: GatewayContext,
  hostId: string,
  input: RepositoryCheckInput,
): Promise<RepositoryCheck> {
  const checked =
    hostId === ctx.config.hostId && ctx.config.gatewayRunsLaunches
      ? await checkRepository(input, ctx.config)
      : await checkRepositoryOn(ctx.temporal, ctx.config, hostId, input);
  if (!checked.ok && 'code' in checked) throw new ApiError(checked.code);
  return checked;
}

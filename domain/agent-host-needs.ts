/**
 * What a service's start-up requires of the machine it runs on for the agents it starts: a
 * working sandbox (bubblewrap making namespaces) unless TWS_AGENT_SANDBOX=none, control groups it
 * can write unless TWS_AGENT_LIMITS=off. Only a process that starts agents checks: every worker,
 * and a gateway that runs launches itself (TWS_GATEWAY_RUNS_LAUNCHES). A deployment gives each
 * service what this says (test/deploy-files.test.ts reads docker-compose.yml beside it).
 */
import type { Config } from './config';
import type { AgentIsolation, AgentNetworkPolicy } from './sandbox';

export type ServiceRole = 'worker' | 'gateway';

export interface AgentHostNeeds {
  /** Whether this process starts agents at all. */
  startsAgents: boolean;
  /** bubblewrap must run here (in a container: namespaces allowed by seccomp and AppArmor). */
  sandbox: boolean;
  /** The memory, pids and cpu control groups must be writable here. */
  cgroups: boolean;
}

export function agentHostNeeds(
  config: Pick<Config, 'agentSandbox' | 'limits' | 'gatewayRunsLaunches'>,
  role: ServiceRole,
): AgentHostNeeds {
  const startsAgents = role === 'worker' || config.gatewayRunsLaunches;
  return {
    startsAgents,
    sandbox: startsAgents && config.agentSandbox !== 'none',
    cgroups: startsAgents && config.limits.enabled,
  };
}

/**
 * What a process that starts no agent says of them (/readyz): what the settings ask of the hosts
 * that do, whose workers refuse to start without it. (A host with TWS_AGENT_SANDBOX=auto and
 * `egress` but no slirp4netns gives its agents the host's network: its own worker says so.)
 */
export function statedAgentBoundary(config: Pick<Config, 'agentSandbox' | 'agentNetwork'>): {
  agentIsolation: AgentIsolation;
  agentNetwork: AgentNetworkPolicy;
} {
  return config.agentSandbox === 'none'
    ? { agentIsolation: 'none', agentNetwork: 'host' }
    : { agentIsolation: 'bwrap', agentNetwork: config.agentNetwork };
}

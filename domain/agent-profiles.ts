/**
 * The agent profiles the operator names (TWS_AGENT_PROFILES, JSON): each one's argv, variables,
 * limits and container image, checked at start-up, each problem refused in one line.
 */
import { agentVariableProblem } from './agent-env';
import { isImageName } from './agent-settings';
import { parseProfileLimits, type AgentLimits, type LimitsRequest } from './limits';

export interface AgentProfile {
  /** argv; the built-in profile `shell` takes the argv from the launch request instead. */
  command: string[];
  /** Variables the profile's agents get (a request's own `env` wins). */
  env: Record<string, string>;
  /** What its agents may use, where not the defaults (a request's own `limits` win). */
  limits?: LimitsRequest;
  /** The image its `container` agents run in, where not TWS_CONTAINER_IMAGE. */
  image?: string;
}

export function parseProfiles(raw: string | undefined, maximum: AgentLimits): Record<string, AgentProfile> {
  if (!raw) return {};
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== 'object' || parsed === null) throw new Error('TWS_AGENT_PROFILES must be a JSON object');
  const profiles: Record<string, AgentProfile> = {};
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    const command = (value as { command?: unknown }).command;
    if (!Array.isArray(command) || command.length === 0 || !command.every((part) => typeof part === 'string')) {
      throw new Error(`TWS_AGENT_PROFILES.${name}.command must be a non-empty array of strings`);
    }
    const env = (value as { env?: unknown }).env ?? {};
    if (
      typeof env !== 'object' ||
      env === null ||
      Object.entries(env).some(([k, v]) => agentVariableProblem(k) !== null || typeof v !== 'string')
    ) {
      throw new Error(`TWS_AGENT_PROFILES.${name}.env must map upper-case names (not TWS_*) to strings`);
    }
    const limits = parseProfileLimits(name, (value as { limits?: unknown }).limits, maximum);
    const image = (value as { image?: unknown }).image;
    if (image !== undefined && (typeof image !== 'string' || !isImageName(image)))
      throw new Error(`TWS_AGENT_PROFILES.${name}.image must be an image name`);
    profiles[name] = {
      command: command as string[],
      env: env as Record<string, string>,
      limits,
      ...(image !== undefined ? { image } : {}),
    };
  }
  return profiles;
}

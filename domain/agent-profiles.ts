/**
 * The agent profiles the operator names (TWS_AGENT_PROFILES, JSON) over the built-in ones
 * (domain/agent-builtins.ts): each one's argv, variables, limits, container image, how it reads
 * its prompt and the credentials its agents get, checked at start-up, each problem refused in one line.
 */
import { agentVariableProblem } from './agent-env';
import { isImageName } from './agent-settings';
import { parseProfileLimits, type AgentLimits, type LimitsRequest } from './limits';
import { parseCredentials, parsePromptDelivery, type AgentCredentials, type PromptDelivery } from './agent-prompt';

export interface AgentProfile {
  /** argv; the built-in profile `shell` takes the argv from the launch request instead. */
  command: string[];
  /** Variables the profile's agents get (a request's own `env` wins); stored with the session, shown in its view: no secrets here. */
  env: Record<string, string>;
  /** What its agents may use, where not the defaults (a request's own `limits` win). */
  limits?: LimitsRequest;
  /** The image its `container` agents run in, where not TWS_CONTAINER_IMAGE. */
  image?: string;
  /** How its agents read the prompt; absent: only as the file TWS_PROMPT_FILE names, and a prompt is optional. */
  prompt?: PromptDelivery;
  /** Given to its agents at their start only (domain/agent-prompt.ts): never stored, shown or logged. */
  credentials?: AgentCredentials;
}

/**
 * The operator's profiles over `builtins`: an entry of a built-in's name replaces it, and may leave
 * out its `command` and `prompt` to keep the built-in's (to give it credentials, say).
 */
export function parseProfiles(
  raw: string | undefined,
  maximum: AgentLimits,
  builtins: Record<string, AgentProfile> = {},
): Record<string, AgentProfile> {
  if (!raw) return { ...builtins };
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== 'object' || parsed === null) throw new Error('TWS_AGENT_PROFILES must be a JSON object');
  const profiles: Record<string, AgentProfile> = { ...builtins };
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    const builtin = Object.prototype.hasOwnProperty.call(builtins, name) ? builtins[name] : undefined;
    const command = (value as { command?: unknown }).command ?? builtin?.command;
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
    const prompt = parsePromptDelivery(
      name,
      value as { prompt?: unknown; promptArguments?: unknown },
      (value as { command?: unknown }).command === undefined ? builtin?.prompt : undefined,
    );
    const credentials = parseCredentials(name, (value as { credentials?: unknown }).credentials);
    profiles[name] = {
      command: command as string[],
      env: env as Record<string, string>,
      limits,
      ...(image !== undefined ? { image } : {}),
      ...(prompt ? { prompt } : {}),
      ...(credentials ? { credentials } : {}),
    };
  }
  return profiles;
}

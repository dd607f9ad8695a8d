/**
 * How an agent reads its prompt and which credentials it gets, as data a profile carries
 * (domain/agent-profiles.ts, domain/agent-builtins.ts), and the two pure steps its start takes
 * from them: the argv that delivers the prompt, and the credential variables.
 */
import path from 'node:path';
import { agentVariableProblem } from './agent-env';

/** `argument`: in the argv; `file`: the prompt file's path in the argv; `stdin`: the prompt file as standard input. */
type PromptMode = 'argument' | 'stdin' | 'file';

export interface PromptDelivery {
  mode: PromptMode;
  /** Appended after the profile's argv and the request's `args`; `{prompt}` is the prompt's text, `{promptFile}` its file's path. */
  arguments: string[];
}

const PROMPT_PLACEHOLDER = '{prompt}';
const PROMPT_FILE_PLACEHOLDER = '{promptFile}';

const DEFAULT_ARGUMENTS: Record<PromptMode, string[]> = {
  argument: [PROMPT_PLACEHOLDER],
  file: [PROMPT_FILE_PLACEHOLDER],
  stdin: [],
};

/** What each mode's arguments must name (stdin: neither, its prompt comes on standard input). */
const NEEDS: Record<PromptMode, string | null> = {
  argument: PROMPT_PLACEHOLDER,
  file: PROMPT_FILE_PLACEHOLDER,
  stdin: null,
};

export function parsePromptDelivery(
  profile: string,
  value: { prompt?: unknown; promptArguments?: unknown },
  inherited?: PromptDelivery,
): PromptDelivery | undefined {
  if (value.prompt === undefined && value.promptArguments === undefined) return inherited;
  const mode = value.prompt ?? inherited?.mode;
  if (mode !== 'argument' && mode !== 'stdin' && mode !== 'file')
    throw new Error(`TWS_AGENT_PROFILES.${profile}.prompt must be "argument", "stdin" or "file"`);
  const args = value.promptArguments ?? (value.prompt === undefined ? inherited?.arguments : undefined);
  if (args !== undefined && (!Array.isArray(args) || !args.every((a) => typeof a === 'string')))
    throw new Error(`TWS_AGENT_PROFILES.${profile}.promptArguments must be an array of strings`);
  const delivery: PromptDelivery = {
    mode: mode as PromptMode,
    arguments: (args as string[] | undefined) ?? DEFAULT_ARGUMENTS[mode],
  };
  const needed = NEEDS[delivery.mode];
  if (needed && !delivery.arguments.some((a) => a.includes(needed)))
    throw new Error(
      `TWS_AGENT_PROFILES.${profile}.promptArguments must contain ${needed} for prompt "${delivery.mode}"`,
    );
  return delivery;
}

/**
 * The argv that starts an agent with its prompt: the command, then the delivery's arguments with
 * the prompt (or its file's path) in place; for `stdin`, run by /bin/sh with the prompt file as its
 * standard input (the file's path an argument, never shell text). No delivery or no prompt: the command.
 */
export function deliveredCommand(
  command: string[],
  delivery: PromptDelivery | undefined,
  prompt: string | null | undefined,
  promptPath: string,
): string[] {
  if (!delivery || prompt == null) return command;
  const args = delivery.arguments.map((a) =>
    a.split(PROMPT_FILE_PLACEHOLDER).join(promptPath).split(PROMPT_PLACEHOLDER).join(prompt),
  );
  if (delivery.mode !== 'stdin') return [...command, ...args];
  return ['/bin/sh', '-c', 'f=$1; shift; exec "$@" <"$f"', 'tws-agent', promptPath, ...command, ...args];
}

/** One argv string's bound on Linux (MAX_ARG_STRLEN, 32 pages, its NUL included), less room for an argument's other text. */
const PROMPT_ARGUMENT_MAX_BYTES = 128 * 1024 - 1024;

/** Why a run's prompt cannot be given the way its profile reads it (a phrase), or null. */
export function promptProblem(delivery: PromptDelivery | undefined, prompt: string | null | undefined): string | null {
  if (!delivery) return null;
  if (prompt == null || prompt === '') return 'reads a prompt: give prompt (its text)';
  if (delivery.mode === 'argument' && prompt.includes('\0'))
    return 'takes its prompt as an argument, which holds no NUL';
  if (delivery.mode === 'argument' && Buffer.byteLength(prompt) > PROMPT_ARGUMENT_MAX_BYTES)
    return `takes its prompt as an argument, at most ${PROMPT_ARGUMENT_MAX_BYTES} bytes`;
  return null;
}

/**
 * What a profile's agents are given at their start and nowhere else: variables with values from
 * the configuration, names whose values are read from the service's environment then, and files
 * copied read-only into their home.
 */
export interface AgentCredentials {
  env: Record<string, string>;
  passEnv: string[];
  /** `path`: where in the agent's home (relative); `from`: the host file it is copied from (absolute). */
  files: { path: string; from: string }[];
}

/**
 * The service's own variables, never passed to an agent: its TWS_ settings and tokens, its
 * database's and engine's addresses and credentials, its telemetry's.
 */
function serviceVariable(name: string): boolean {
  return (
    name.startsWith('TWS_') ||
    name === 'DATABASE_URL' ||
    name.startsWith('PG') ||
    name.startsWith('TEMPORAL_') ||
    name.startsWith('OTEL_') ||
    name === 'NODE_OPTIONS'
  );
}

/** HOME is the agent's own (its task's home): no credential sets it. */
const credentialNameProblem = (name: string): boolean =>
  agentVariableProblem(name) !== null || serviceVariable(name) || name === 'HOME';

export function parseCredentials(profile: string, raw: unknown): AgentCredentials | undefined {
  if (raw === undefined) return undefined;
  const where = `TWS_AGENT_PROFILES.${profile}.credentials`;
  if (typeof raw !== 'object' || raw === null) throw new Error(`${where} must be an object`);
  const { env = {}, passEnv = [], files = [] } = raw as { env?: unknown; passEnv?: unknown; files?: unknown };
  if (
    typeof env !== 'object' ||
    env === null ||
    Object.entries(env).some(([k, v]) => credentialNameProblem(k) || typeof v !== 'string')
  )
    throw new Error(`${where}.env must map upper-case names (not HOME, not the service's own) to strings`);
  if (!Array.isArray(passEnv) || passEnv.some((n) => typeof n !== 'string' || credentialNameProblem(n)))
    throw new Error(`${where}.passEnv must list upper-case names (not HOME, not the service's own)`);
  if (!Array.isArray(files) || !files.every(credentialFileValid))
    throw new Error(`${where}.files must list { "path": a relative path in the home, "from": an absolute host path }`);
  return {
    env: env as Record<string, string>,
    passEnv: passEnv as string[],
    files: (files as { path: string; from: string }[]).map((f) => ({ path: path.normalize(f.path), from: f.from })),
  };
}

function credentialFileValid(file: unknown): boolean {
  const { path: at, from } = (file ?? {}) as { path?: unknown; from?: unknown };
  if (typeof at !== 'string' || typeof from !== 'string' || !path.isAbsolute(from)) return false;
  const normal = path.normalize(at);
  // Inside the home, and never the git config the service keeps there.
  return !path.isAbsolute(normal) && !normal.startsWith('..') && normal !== '.' && normal !== '.gitconfig';
}

/** The credential variables of a start: the configured ones, then those of the named ones the service has. */
export function credentialEnvironment(
  credentials: AgentCredentials | undefined,
  service: Record<string, string | undefined>,
): Record<string, string> {
  if (!credentials) return {};
  const env = { ...credentials.env };
  for (const name of credentials.passEnv) {
    const value = service[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Whether a profile's credentials give its agents anything. */
export const hasCredentials = (c: AgentCredentials | undefined): boolean =>
  !!c && (Object.keys(c.env).length > 0 || c.passEnv.length > 0 || c.files.length > 0);

/**
 * The built-in profiles of the common coding agents, beside the built-in `shell`: each one's
 * non-interactive command line and the way it reads its prompt, as their own documentation gives
 * them. TWS_BUILTIN_PROFILES lists those that are on (all by default, `none` for none); an entry of
 * the same name in TWS_AGENT_PROFILES replaces one (domain/agent-profiles.ts).
 */
import type { AgentProfile } from './agent-profiles';

/** The built-in profile that runs the request's own argv (TWS_SHELL_PROFILE=0 turns it off). */
export const BUILTIN_SHELL_PROFILE = 'shell';

export const BUILTIN_AGENT_PROFILES: Readonly<Record<string, AgentProfile>> = {
  // Claude Code's print mode. Its permission prompts cannot be answered headless: skipped, as the
  // agent's sandbox (its own uid, only its workspace writable) is the boundary; Claude Code
  // refuses the flag as root, which an agent never is in the sandbox.
  claude: {
    command: ['claude', '--dangerously-skip-permissions'],
    env: {},
    prompt: { mode: 'argument', arguments: ['-p', '{prompt}'] },
  },
  // Codex's non-interactive mode, allowed to edit its workspace; a workspace of several
  // repositories is not itself a git repository, which `codex exec` refuses without the check skipped.
  codex: {
    command: ['codex', 'exec', '--sandbox', 'workspace-write', '--skip-git-repo-check'],
    env: {},
    prompt: { mode: 'argument', arguments: ['{prompt}'] },
  },
  // Gemini CLI runs headless when its input is not a terminal, and reads the prompt from it;
  // --yolo accepts its actions.
  gemini: { command: ['gemini', '--yolo'], env: {}, prompt: { mode: 'stdin', arguments: [] } },
  // aider reads one message from a file, answers yes to its questions, and exits.
  aider: {
    command: ['aider', '--yes-always'],
    env: {},
    prompt: { mode: 'file', arguments: ['--message-file', '{promptFile}'] },
  },
};

/** TWS_BUILTIN_PROFILES: the built-ins that are on, comma-separated; unset: all; `none`: none. */
export function builtinProfiles(raw: string | undefined): Record<string, AgentProfile> {
  if (raw === undefined || raw.trim() === '') return { ...BUILTIN_AGENT_PROFILES };
  if (raw.trim() === 'none') return {};
  const names = raw.split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !Object.prototype.hasOwnProperty.call(BUILTIN_AGENT_PROFILES, n));
  if (unknown.length > 0)
    throw new Error(
      `TWS_BUILTIN_PROFILES must list built-in profiles (${Object.keys(BUILTIN_AGENT_PROFILES).join(', ')}) or be none`,
    );
  return Object.fromEntries(names.map((n) => [n, BUILTIN_AGENT_PROFILES[n]!]));
}

/**
 * The configured profile a session's agents run as (its prompt delivery and credentials); undefined
 * for the built-in `shell` (while on) and for a name the configuration no longer has.
 */
export function profileNamed(
  config: { agentProfiles: Record<string, AgentProfile>; shellProfile: boolean },
  name: string | undefined,
): AgentProfile | undefined {
  if (name === undefined || (name === BUILTIN_SHELL_PROFILE && config.shellProfile)) return undefined;
  return Object.prototype.hasOwnProperty.call(config.agentProfiles, name) ? config.agentProfiles[name] : undefined;
}

/**
 * An agent's environment is an allow-list, never the service's environment minus a few names:
 * whatever the service is given (tokens, database URLs, keys) stays out of the agent's reach.
 */
/** A variable a profile or a request may give an agent: upper-case, and not of the service's own TWS_ namespace. */
export function agentVariableProblem(name: string): string | null {
  if (!/^[A-Z_][A-Z0-9_]*$/.test(name))
    return 'names are upper-case letters, digits and underscores, not starting with a digit';
  if (name.startsWith('TWS_')) return 'TWS_ names are reserved';
  return null;
}

const INHERITED = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'TERM', 'TZ'];

export interface AgentIdentity {
  sessionId: string;
  taskId: string;
  workspace: string;
}

export function agentEnvironment(
  service: NodeJS.ProcessEnv,
  agent: AgentIdentity,
  extra: Record<string, string> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(service)) {
    if (value !== undefined && (INHERITED.includes(name) || name.startsWith('LC_'))) env[name] = value;
  }
  // The profile's and the request's variables; TWS_* names are the service's own and are set last.
  for (const [name, value] of Object.entries(extra)) if (!name.startsWith('TWS_')) env[name] = value;
  env.TWS_SESSION_ID = agent.sessionId;
  env.TWS_TASK_ID = agent.taskId;
  env.TWS_WORKSPACE = agent.workspace;
  return env;
}

/**
 * An agent's environment is an allow-list, never the service's environment minus a few names:
 * whatever the service is given (tokens, database URLs, keys) stays out of the agent's reach.
 */
const INHERITED = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'TERM', 'TZ'];

export interface AgentIdentity {
  sessionId: string;
  taskId: string;
  workspace: string;
}

export function agentEnvironment(service: NodeJS.ProcessEnv, agent: AgentIdentity, extra: Record<string, string> = {}): Record<string, string> {
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

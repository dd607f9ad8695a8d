/**
 * Starting agents from `tws`: `launch` (one `POST /v1/tasks/:id/sessions`) and `resume` (one
 * `POST /v1/sessions/:id/resume`, of a session or of a task's newest one), each with `-f` to
 * follow the agent's log until the session ends (`GET /v1/sessions/:id/logs?follow=1`). A local
 * agent is the operator's where the service says so: its launch goes with the operator token.
 */
import { call, CliError, EXIT, idAt, json, table, type CommandContext, type Target } from './cli-io';

export const LAUNCH_COMMANDS = new Set(['launch', 'resume']);

const EXECUTORS = ['worktree', 'local', 'ssh', 'container'];
/** How long after its log ends a session may still read running, and how often it is asked. */
const SETTLE_MS = 30_000;
const SETTLE_POLL_MS = 250;

/** What the agent printed, as it comes, until it ends (the route's own follow). */
async function followLog(t: Target, sessionId: string, out: (s: string) => void): Promise<void> {
  const res = await call(t, 'GET', `/v1/sessions/${sessionId}/logs?follow=1`);
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
    out(decoder.decode(chunk, { stream: true }));
}

interface SessionView {
  id: string;
  taskId: string;
  state: string;
  executorType: string;
}

export async function launchCommand(command: string, c: CommandContext): Promise<number> {
  const { p, asJson, usage, out } = c;
  const text = (name: string) => (typeof p.flags.get(name) === 'string' ? (p.flags.get(name) as string) : undefined);
  const follow = p.flags.has('--follow');
  const prompt = text('--prompt');
  const id = idAt(p, 1, command === 'launch' ? 'task id' : 'session or task id', usage);
  let session: { sessionId: string; state: string; [more: string]: unknown };

  if (command === 'launch') {
    const executorType = text('--executor') ?? 'worktree';
    if (!EXECUTORS.includes(executorType))
      throw new CliError(`--executor takes one of ${EXECUTORS.join(', ')}\n${usage}`, EXIT.usage);
    const command = p.rest ?? undefined;
    if (command && command.length === 0) throw new CliError(`give the command after --\n${usage}`, EXIT.usage);
    // A command alone runs as the shell profile's; any other agent is named by its profile.
    const agentProfile = text('--profile') ?? (command ? 'shell' : undefined);
    if (!agentProfile) throw new CliError(`give --profile P, or a command after --\n${usage}`, EXIT.usage);
    const body = { executorType, agentProfile, ...(command ? { command } : {}), ...(prompt ? { prompt } : {}) };
    const t = c.target(executorType === 'local' ? 'operator' : 'user');
    session = await json(t, 'POST', `/v1/tasks/${id}/sessions`, body);
  } else {
    if (p.rest) throw new CliError(`resume runs the session's own command\n${usage}`, EXIT.usage);
    const resumed = await sessionOrNewestOfTask(c.target(), id);
    const t = c.target(resumed.executorType === 'local' ? 'operator' : 'user');
    const body = prompt ? { prompt } : {};
    const view = await json(t, 'POST', `/v1/sessions/${resumed.id}/resume`, body);
    session = { ...view, sessionId: view.id };
  }
  if (!follow) {
    out(`${asJson ? JSON.stringify(session, null, 2) : table([session], ['sessionId', 'state', 'executionId'])}\n`);
    return EXIT.ok;
  }
  // Following: the log first, then how the session ended (--json: the session as it ended).
  if (!asJson) out(`session ${session.sessionId} ${session.state}\n`);
  await followLog(c.target(), session.sessionId, asJson ? () => {} : out);
  const ended = await settled(c.target(), session.sessionId);
  out(asJson ? `${JSON.stringify(ended, null, 2)}\n` : `session ${ended.id} ${ended.state}\n`);
  return EXIT.ok;
}

/** The session once its agent's end is recorded (the log ends as the agent does; the record follows within moments). */
async function settled(t: Target, sessionId: string): Promise<{ id: string; state: string }> {
  for (let waited = 0; ; waited += SETTLE_POLL_MS) {
    const session = await json(t, 'GET', `/v1/sessions/${sessionId}`);
    if (!['starting', 'running'].includes(session.state) || waited >= SETTLE_MS) return session;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
  }
}

/** The session named, or, for a task's id, the task's newest session (none: not found). */
async function sessionOrNewestOfTask(t: Target, id: string): Promise<SessionView> {
  try {
    return await json(t, 'GET', `/v1/sessions/${id}`);
  } catch (err) {
    if (!(err instanceof CliError) || err.code !== EXIT.notFound) throw err;
  }
  const task = await json(t, 'GET', `/v1/tasks/${id}`);
  const sessions = [...(task.sessions as (SessionView & { createdAt: string })[])].sort((a, b) =>
    a.createdAt < b.createdAt ? 1 : -1,
  );
  if (!sessions[0]) throw new CliError(`task ${id} has no session to resume: launch one`, EXIT.notFound);
  return { ...sessions[0], taskId: id };
}

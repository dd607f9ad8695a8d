/**
 * `tws stop`: one agent (a session id), a task's agents (a task id: each of its sessions running or
 * starting) or, with `--all`, every agent of the instance. Each is one `POST /v1/sessions/:id/stop`;
 * files, worktrees and branches stay. There is no route that stops a task's agents at once, so the
 * sessions are read first: one launched meanwhile is not stopped (run it again).
 */
import { all, CliError, EXIT, idAt, json, table, type CommandContext, type Target } from './cli-io';

interface Listed {
  id: string;
  taskId: string;
  state: string;
}

export async function stopCommand(c: CommandContext): Promise<number> {
  const { p, asJson, usage, out } = c;
  const print = (value: unknown, human: () => string) => out(`${asJson ? JSON.stringify(value, null, 2) : human()}\n`);
  const every = p.flags.has('--all');
  if (every === (p.positional[1] !== undefined))
    throw new CliError(`give one session or task id, or --all\n${usage}`, EXIT.usage);
  const t = c.target();
  if (every) {
    const listed = [
      ...(await all(t, '/v1/sessions', { state: 'running' })),
      ...(await all(t, '/v1/sessions', { state: 'starting' })),
    ];
    return stopEach(t, listed, 'sessions', print);
  }
  const id = idAt(p, 1, 'session or task id', usage);
  const session = await sessionOrNull(t, id);
  if (session) {
    const after = await json(t, 'POST', `/v1/sessions/${id}/stop`);
    print(after, () => `${after.id} ${after.state}`);
    return EXIT.ok;
  }
  // Not a session: a task's id (neither: not found, exit 4).
  const task = await json(t, 'GET', `/v1/tasks/${id}`);
  const atWork = (task.sessions as Listed[])
    .filter((s) => s.state === 'running' || s.state === 'starting')
    .map((s) => ({ ...s, taskId: id }));
  if (atWork.length === 0 && !asJson) {
    out(`task ${id} has no agent running or starting: nothing to stop\n`);
    return EXIT.ok;
  }
  return stopEach(t, atWork, `of task ${id}'s sessions`, print);
}

async function sessionOrNull(t: Target, id: string): Promise<Listed | null> {
  try {
    return await json(t, 'GET', `/v1/sessions/${id}`);
  } catch (err) {
    if (err instanceof CliError && err.code === EXIT.notFound) return null;
    throw err;
  }
}

/** Stops each; a refusal of one is its row's `error` (its code and action) and the exit is 1. */
async function stopEach(
  t: Target,
  listed: Listed[],
  what: string,
  print: (value: unknown, human: () => string) => void,
): Promise<number> {
  const results: { id: string; taskId: string; state?: string; error?: string }[] = [];
  for (const s of listed) {
    try {
      const after = await json(t, 'POST', `/v1/sessions/${s.id}/stop`);
      results.push({ id: s.id, taskId: s.taskId, state: after.state });
    } catch (err) {
      if (!(err instanceof CliError) || err.code === EXIT.unavailable) throw err;
      results.push({ id: s.id, taskId: s.taskId, error: err.message });
    }
  }
  const failed = results.filter((r) => r.error !== undefined);
  const noun = what === 'sessions' ? `session${listed.length === 1 ? '' : 's'}` : what;
  print(results, () =>
    [
      `stopped ${results.length - failed.length} of ${listed.length} ${noun}`,
      ...(results.length > 0 ? [table(results, ['id', 'taskId', 'state', 'error'])] : []),
    ].join('\n'),
  );
  return failed.length > 0 ? EXIT.refused : EXIT.ok;
}

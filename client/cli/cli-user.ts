/**
 * A user's `tws` commands on repositories and tasks: `repo add|list`, `task new|list|show|archive|
 * unarchive|delete` and `status`, each one route (client/gateway/routes/catalog.ts, tasks.ts,
 * cleanup.ts, git-status.ts) with the user token, but `task delete`, whose route is the
 * operator's. A refusal exits 1 with its code and action; with `--json` its body is printed too.
 */
import path from 'node:path';
import { all, CliError, EXIT, idAt, json, printable, table, type CommandContext } from './cli-io';

export const USER_COMMANDS = new Set(['repo', 'task', 'status']);

const TASK_SUBCOMMANDS = ['new', 'list', 'show', 'archive', 'unarchive', 'delete'];

/** The options each subcommand takes, of those its command's usage names. */
const SUB_OPTIONS: Record<string, string[]> = {
  'repo add': ['--default-branch', '--host'],
  'repo list': [],
  'task new': ['--repository', '--base', '--board'],
  'task list': ['--archived', '--board'],
  'task show': [],
  'task archive': [],
  'task unarchive': [],
  'task delete': ['--discard'],
};

const COMMON = new Set(['--json', '--data-dir', '--api', '--help']);

export async function userCommand(command: string, c: CommandContext): Promise<number> {
  const { p, asJson, usage, out } = c;
  const print = (value: unknown, human: () => string) => out(`${asJson ? JSON.stringify(value, null, 2) : human()}\n`);
  const text = (name: string) => (typeof p.flags.get(name) === 'string' ? (p.flags.get(name) as string) : undefined);
  if (command === 'status') {
    const id = idAt(p, 1, 'task id', usage);
    const status = await json(c.target(), 'GET', `/v1/tasks/${id}/git-status`);
    print(status, () => statusReport(status));
    return EXIT.ok;
  }
  const sub = p.positional[1];
  const subs = command === 'repo' ? ['add', 'list'] : TASK_SUBCOMMANDS;
  if (!sub || !subs.includes(sub)) throw new CliError(`give one of ${subs.join(', ')}\n${usage}`, EXIT.usage);
  const allowed = new Set([...SUB_OPTIONS[`${command} ${sub}`]!, ...COMMON]);
  const stray = [...p.flags.keys()].find((f) => !allowed.has(f));
  if (stray) throw new CliError(`${command} ${sub} takes no ${stray}\n${usage}`, EXIT.usage);

  switch (`${command} ${sub}`) {
    case 'repo add': {
      const [, , name, where, ...extra] = p.positional;
      if (!name || !where || extra.length > 0) throw new CliError(`give a name and a path\n${usage}`, EXIT.usage);
      const body = {
        name,
        // The path on the host that holds it; a relative one is this folder's (tws runs beside make start).
        path: path.resolve(where),
        ...(text('--default-branch') ? { defaultBranch: text('--default-branch') } : {}),
        ...(text('--host') ? { hostId: text('--host') } : {}),
      };
      const repo = await json(c.target(), 'POST', '/v1/repositories', body);
      print(repo, () => table([repo], ['id', 'name', 'defaultBranch']));
      return EXIT.ok;
    }
    case 'repo list': {
      const repos = await all(c.target(), '/v1/repositories', {});
      print(repos, () => table(repos, ['id', 'name', 'defaultBranch', 'remote']));
      return EXIT.ok;
    }
    case 'task new': {
      const [, , title, ...extra] = p.positional;
      if (!title || extra.length > 0) throw new CliError(`give one title (quote it)\n${usage}`, EXIT.usage);
      const base = text('--base');
      const body = {
        title,
        repositories: (p.lists.get('--repository') ?? []).map((repositoryId) => ({
          repositoryId,
          ...(base ? { baseBranch: base } : {}),
        })),
        ...(text('--board') ? { boardId: text('--board') } : {}),
      };
      const task = await json(c.target(), 'POST', '/v1/tasks', body);
      print(task, () => table([task], ['id', 'title', 'state', 'createdAt']));
      return EXIT.ok;
    }
    case 'task list': {
      const tasks = await all(c.target(), '/v1/tasks', {
        archived: p.flags.has('--archived') ? 'true' : 'false',
        boardId: text('--board'),
      });
      print(tasks, () => table(tasks, ['id', 'title', 'state', 'createdAt']));
      return EXIT.ok;
    }
    case 'task show': {
      const task = await json(c.target(), 'GET', `/v1/tasks/${idAt(p, 2, 'task id', usage)}`);
      print(task, () => taskReport(task));
      return EXIT.ok;
    }
    case 'task archive':
    case 'task unarchive': {
      const id = idAt(p, 2, 'task id', usage);
      const res = await json(c.target(), 'POST', `/v1/tasks/${id}/${sub}`);
      // Archive answers its cleanup job (202); unarchive the task as it is now.
      print(res, () =>
        sub === 'archive' ? `${id} archiving: cleanup ${res.operationId} ${res.state}` : `${id} ${res.state}`,
      );
      return EXIT.ok;
    }
    case 'task delete': {
      const id = idAt(p, 2, 'task id', usage);
      // Uncommitted work is lost only with consent: without --discard the service refuses
      // (task_delete_dirty_worktree, action discard_or_commit) and nothing changes.
      const q = p.flags.has('--discard') ? '?discardChanges=true' : '';
      const res = await json(c.target('operator'), 'DELETE', `/v1/tasks/${id}${q}`);
      print(res, () => `${id} deleting: cleanup ${res.operationId} ${res.state} (tws job ${res.operationId})`);
      return EXIT.ok;
    }
    default:
      throw new CliError(`unknown ${command} command ${sub}\n${usage}`, EXIT.usage);
  }
}

interface TaskView {
  id: string;
  title: string;
  state: string;
  createdAt: string;
  merged: { at: string } | null;
  repositories: { repositoryId: string; baseBranch: string }[];
  environment: { state?: string; hostId?: string } | null;
  sessions: { id: string; state: string; executorType: string; createdAt: string }[];
}

function taskReport(task: TaskView): string {
  return [
    table(
      [{ ...task, merged: task.merged?.at ?? null, environment: task.environment?.state ?? null }],
      ['id', 'title', 'state', 'environment', 'merged', 'createdAt'],
    ),
    'repositories:',
    table(task.repositories, ['repositoryId', 'baseBranch']),
    'sessions:',
    table(task.sessions, ['id', 'state', 'executorType', 'createdAt']),
  ].join('\n');
}

interface StatusView {
  repositories: {
    repositoryId: string;
    branch: string | null;
    head: string | null;
    ahead: number;
    behind: number;
    files: { path: string; status: string }[];
  }[];
}

/** Per repository: its branch, head, how far from its base, and each changed file (as text). */
function statusReport(status: StatusView): string {
  return status.repositories
    .map((r) =>
      [
        `${r.repositoryId}  ${printable(r.branch ?? '(no branch)')} ${r.head ? r.head.slice(0, 7) : '-'}  ahead ${r.ahead}, behind ${r.behind}`,
        ...(r.files.length === 0 ? ['  clean'] : r.files.map((f) => `  ${f.status.padEnd(10)} ${printable(f.path)}`)),
      ].join('\n'),
    )
    .join('\n');
}

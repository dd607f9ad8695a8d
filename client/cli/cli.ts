/**
 * The operator CLI, `npx tws <command>` (the package's bin): a client of the HTTP API, so it
 * works against any gateway and needs neither the database nor Temporal. Which API and token:
 * client/cli/cli-instance.ts (the `.data/` of this checkout, or `--data-dir`, `--api`, the `TWS_`
 * variables); what each command takes: client/cli/cli-usage.ts. Human tables by default, `--json`
 * for scripts; exit codes in `EXIT` (client/cli/cli-io.ts).
 */
import { readFileSync } from 'node:fs';
import { parseDuration } from '../../domain/idle';
import {
  all,
  call,
  CliError,
  EXIT,
  json,
  one as oneOf,
  parse as parseArgs,
  refusalBody,
  table,
  type Parsed,
  type Target,
} from './cli-io';
import { finishing, FINISHING_COMMANDS } from './cli-finishing';
import { target as findTarget, type Role } from './cli-instance';
import { userCommand, USER_COMMANDS } from './cli-user';
import { launchCommand, LAUNCH_COMMANDS } from './cli-launch';
import { stopCommand } from './cli-stop';
import { boardCommand } from './cli-board';
import { diffCommand } from './cli-diff';
import { diskCommand, limitsReport } from './cli-reports';
import { COMMANDS, commandUsage, optionsOf, USAGE } from './cli-usage';

/** A file of known_hosts lines, read here (they are public keys, not secrets). */
function readKnownHosts(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new CliError('--known-hosts names a file this command cannot read', EXIT.usage);
  }
}

export async function run(argv: string[], env: NodeJS.ProcessEnv, out: (s: string) => void): Promise<number> {
  const p = parseArgs(argv, USAGE);
  try {
    return await dispatch(p, env, out);
  } catch (err) {
    // Every command's refusal, in one place: with --json the API's body on stdout too; exit 1 either way.
    const body = p.flags.has('--json') ? refusalBody(err) : undefined;
    if (body) out(body);
    throw err;
  }
}

async function dispatch(p: Parsed, env: NodeJS.ProcessEnv, out: (s: string) => void): Promise<number> {
  const asJson = p.flags.has('--json');
  const command = p.positional[0];
  const help = command === 'help' || p.flags.has('--help') || p.flags.has('-h');
  if (command === 'help' && p.positional[1] && COMMANDS[p.positional[1]]) {
    out(`${commandUsage(p.positional[1])}\n`);
    return EXIT.ok;
  }
  if (!command && !help) throw new CliError(`give a command\n${USAGE}`, EXIT.usage);
  if (!command || command === 'help') {
    out(`${USAGE}\n`);
    return EXIT.ok;
  }
  if (!COMMANDS[command]) throw new CliError(`unknown command ${command}\n${USAGE}`, EXIT.usage);
  const usage = commandUsage(command);
  if (help) {
    out(`${usage}\n`);
    return EXIT.ok;
  }
  const accepted = optionsOf(command);
  const unknown = [...p.flags.keys()].find((f) => !accepted.has(f));
  if (unknown) throw new CliError(`unknown option ${unknown} for ${command}\n${usage}`, EXIT.usage);
  const one = (what: string): string => oneOf(p, what, usage);
  const text = (name: string) => (typeof p.flags.get(name) === 'string' ? (p.flags.get(name) as string) : undefined);
  // The token of the role the command's routes need (cli-usage.ts), found once per role.
  const chosen = new Map<Role, Target>();
  const target = (role: Role = COMMANDS[command]!.role ?? 'user'): Target => {
    if (!chosen.has(role)) chosen.set(role, findTarget(env, { dataDir: text('--data-dir'), api: text('--api') }, role));
    return chosen.get(role)!;
  };
  const print = (value: unknown, human: () => string) => out(`${asJson ? JSON.stringify(value, null, 2) : human()}\n`);

  // Finishing a task (preview, merge, merges, undo-merge, rebase): client/cli/cli-finishing.ts.
  if (FINISHING_COMMANDS.has(command)) return finishing(command, { p, asJson, usage, target, one, out });
  // A user's journey (repositories, tasks, agents, the board): client/cli/cli-user.ts, cli-launch.ts, cli-board.ts.
  if (USER_COMMANDS.has(command)) return userCommand(command, { p, asJson, usage, target, out });
  if (LAUNCH_COMMANDS.has(command)) return launchCommand(command, { p, asJson, usage, target, out });
  if (command === 'board') return boardCommand({ p, asJson, usage, target, out });
  if (command === 'stop') return stopCommand({ p, asJson, usage, target, out });

  switch (command) {
    case 'jobs': {
      const jobs = await all(target(), '/v1/cleanup-jobs', {
        state: text('--state'),
        taskId: text('--task'),
        trigger: text('--trigger'),
      });
      print(jobs, () =>
        table(
          jobs.map((j) => ({ ...j, next: j.nextAttemptAt, temporal: j.links?.temporal })),
          ['operationId', 'taskId', 'trigger', 'state', 'attempts', 'next', 'temporal', 'lastError'],
        ),
      );
      return EXIT.ok;
    }
    case 'job': {
      const job = await json(target(), 'GET', `/v1/cleanup-jobs/${one('operation id')}`);
      print(job, () =>
        [
          table([job], ['operationId', 'taskId', 'trigger', 'state', 'attempts', 'nextAttemptAt', 'lastError']),
          `workflow: ${job.workflowId}${job.links?.temporal ? `  ${job.links.temporal}` : ''}`,
          'worktrees:',
          table(job.report?.worktrees ?? [], ['repositoryId', 'outcome', 'savedRef']),
        ].join('\n'),
      );
      return EXIT.ok;
    }
    case 'retry':
    case 'cancel': {
      const id = one('operation id');
      const res = await json(target(), 'POST', `/v1/cleanup-jobs/${id}/${command}`);
      print(res, () => (command === 'retry' ? `retry requested for ${id}` : `${id} ${res.state}`));
      return EXIT.ok;
    }
    case 'abandon': {
      const res = await json(target(), 'POST', `/v1/tasks/${one('task id')}/environment/reset`, {
        abandon: true,
      });
      print(res, () => `${res.operationId} ${res.state}: the environment is released; its files are left as they are`);
      return EXIT.ok;
    }
    case 'tasks': {
      const tasks = await all(target(), '/v1/tasks', {
        archived: p.flags.has('--archived') ? 'true' : 'false',
        boardId: text('--board'),
      });
      print(tasks, () => table(tasks, ['id', 'title', 'state', 'workspaceMode', 'groupId', 'createdAt']));
      return EXIT.ok;
    }
    case 'sessions': {
      const sessions = await all(target(), `/v1/tasks/${one('task id')}/sessions`, {});
      print(sessions, () =>
        table(
          sessions.map((s) => ({
            ...s,
            pid: s.execution?.pid,
            exit: s.execution?.outcome ?? s.execution?.exitCode ?? s.execution?.signal,
          })),
          ['id', 'state', 'role', 'executorType', 'agentProfile', 'pid', 'exit'],
        ),
      );
      return EXIT.ok;
    }
    case 'logs': {
      const id = one('session id');
      const tail = p.flags.get('--tail');
      if (tail !== undefined && (typeof tail !== 'string' || !/^[0-9]{1,6}$/.test(tail)))
        throw new CliError('--tail takes a number of lines', EXIT.usage);
      const q = new URLSearchParams({
        ...(typeof tail === 'string' ? { tail } : {}),
        ...(p.flags.has('--follow') ? { follow: '1' } : {}),
      });
      const res = await call(target(), 'GET', `/v1/sessions/${id}/logs?${q}`);
      // Streamed as it comes (with -f, until the agent ends).
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        out(decoder.decode(chunk, { stream: true }));
      return EXIT.ok;
    }
    case 'hosts': {
      const hosts = await json(target(), 'GET', '/v1/hosts');
      const items = Array.isArray(hosts) ? hosts : hosts.items;
      print(items, () => table(items, ['hostId', 'live', 'lastSeenAt', 'workspaceRoot', 'executors']));
      return EXIT.ok;
    }
    case 'ssh-targets': {
      const targets = await all(target(), '/v1/ssh-targets', {});
      print(targets, () => table(targets, ['id', 'name', 'host', 'port', 'user', 'workspaceRoot', 'hostId']));
      return EXIT.ok;
    }
    case 'ssh-target-set': {
      const id = one('ssh target id');
      const file = text('--known-hosts');
      const port = text('--port');
      if (port !== undefined && !/^[0-9]{1,5}$/.test(port)) throw new CliError('--port takes a number', EXIT.usage);
      const change = Object.fromEntries(
        Object.entries({
          // The known_hosts lines from a file (`ssh-keyscan -p PORT HOST > F`, checked out of band).
          knownHosts: file === undefined ? undefined : readKnownHosts(file),
          host: text('--host'),
          port: port === undefined ? undefined : Number(port),
          user: text('--user'),
          privateKeyPath: text('--key'),
          workspaceRoot: text('--workspace-root'),
        }).filter(([, v]) => v !== undefined),
      );
      if (Object.keys(change).length === 0) throw new CliError(`nothing to change\n${usage}`, EXIT.usage);
      const changed = await json(target(), 'PATCH', `/v1/ssh-targets/${id}`, change);
      print(changed, () => table([changed], ['id', 'name', 'host', 'port', 'user', 'workspaceRoot', 'hostKeyTypes']));
      return EXIT.ok;
    }
    case 'ssh-target-rm': {
      const id = one('ssh target id');
      await call(target(), 'DELETE', `/v1/ssh-targets/${id}`);
      print({ id, removed: true }, () => `${id} removed`);
      return EXIT.ok;
    }
    case 'sweep': {
      const dryRun = p.flags.has('--dry-run');
      const host = p.flags.get('--host');
      const res = await json(target(), 'POST', '/v1/orphan-sweep', {
        dryRun,
        ...(typeof host === 'string' ? { hostId: host } : {}),
      });
      print(res, () =>
        [
          `${dryRun ? 'would remove' : 'removed'}: ${res.removed.length ? res.removed.join(', ') : '(nothing)'}`,
          'kept:',
          table(res.kept, ['name', 'reason']),
        ].join('\n'),
      );
      return EXIT.ok;
    }
    case 'idle-release': {
      const dryRun = p.flags.has('--dry-run');
      const host = p.flags.get('--host');
      const idleFor = p.flags.get('--idle-for');
      let idleForMs: number | undefined;
      try {
        idleForMs = typeof idleFor === 'string' ? parseDuration(idleFor, '--idle-for') : undefined;
      } catch (err) {
        throw new CliError((err as Error).message, EXIT.usage);
      }
      const res = await json(target(), 'POST', '/v1/idle-release', {
        dryRun,
        ...(typeof host === 'string' ? { hostId: host } : {}),
        ...(idleForMs === undefined ? {} : { idleForMs }),
      });
      print(res, () =>
        [
          `${dryRun ? 'would release' : 'released'}:`,
          table(res.released, ['taskId', 'operationId']),
          'kept:',
          table(res.kept, ['taskId', 'reason']),
        ].join('\n'),
      );
      return EXIT.ok;
    }
    case 'push': {
      const res = await json(target(), 'POST', `/v1/tasks/${one('task id')}/push`, { force: p.flags.has('--force') });
      print(res, () => table(res.repositories, ['repositoryId', 'ref', 'commit']));
      return EXIT.ok;
    }
    case 'pin':
    case 'unpin': {
      const id = one('task id');
      const task = await json(target(), command === 'pin' ? 'POST' : 'DELETE', `/v1/tasks/${id}/pin`);
      print(task, () => `${id} ${task.pinned ? 'pinned: never released for idleness' : 'unpinned'}`);
      return EXIT.ok;
    }
    case 'limits': {
      const task = await json(target(), 'GET', `/v1/tasks/${one('task id')}`);
      print({ limits: task.limits, usage: task.usage, disk: task.disk }, () => limitsReport(task));
      return EXIT.ok;
    }
    case 'diff':
      await diffCommand(target(), one('task id'), { patch: p.flags.has('--patch'), asJson }, out);
      return EXIT.ok;
    case 'disk':
      return diskCommand(target(), p, asJson, out);
    default:
      throw new CliError(`unknown command ${command}\n${USAGE}`, EXIT.usage); // a row of COMMANDS without a case
  }
}

/** Runs the CLI as a process: output to stdout, one line of reason on stderr, the exit code. */
export async function main(argv: string[]): Promise<never> {
  try {
    process.exit(await run(argv, process.env, (s) => process.stdout.write(s)));
  } catch (err) {
    process.stderr.write(`tws: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof CliError ? err.code : EXIT.unavailable);
  }
}

// Run as a file (`node .build/client/cli/cli.js`, or client/cli/cli.ts through tsx); bin/tws.mjs calls main itself.
if (process.argv[1] && /client[\\/]cli[\\/]cli\.[jt]s$/.test(process.argv[1])) void main(process.argv.slice(2));

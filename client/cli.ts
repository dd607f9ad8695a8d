/**
 * The operator CLI, `npx tws <command>` (the package's bin): a client of the HTTP API, so it
 * works against any gateway and needs neither the database nor Temporal. It reads the API's
 * address and the operator token from `TWS_API_URL` + `TWS_OPERATOR_TOKEN`, else from what
 * `make start` keeps in this checkout (`.data/secrets.json`, the configured API port).
 * Human tables by default, `--json` for scripts; exit codes in `EXIT` below.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, localApiUrl } from '../domain/config';

/** Exit codes a script can trust. */
export const EXIT = { ok: 0, refused: 1, usage: 2, unavailable: 3, notFound: 4 } as const;

const USAGE = `usage: tws <command> [--json]
  jobs [--state S] [--task ID] [--trigger T]   cleanup jobs (all pages)
  job <operationId>                             one cleanup job, with its report
  retry <operationId>                           a job waiting for an operator: a fresh round of attempts
  cancel <operationId>                          end a waiting job; the barrier lifts (a delete's leftovers are recorded abandoned)
  abandon <taskId>                              release the task's environment without touching a file
  sessions <taskId>                             the task's sessions
  logs [-f] [--tail N] <sessionId>              what the session's agent printed (-f: until it ends)
  hosts                                         the executor hosts and whether they are live
  ssh-targets                                   the SSH targets of the ssh executor (never their keys)
  sweep [--dry-run] [--host H]                  the orphan sweep of a host's workspace root (dry run: nothing removed)
exit codes: 0 done, 1 refused by the service (the reason on stderr), 2 usage, 3 service unreachable or failing, 4 not found`;

class CliError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

interface Target {
  url: string;
  token: string;
}

/** TWS_API_URL + TWS_OPERATOR_TOKEN, else the `make start` of this checkout. */
function target(env: NodeJS.ProcessEnv): Target {
  const config = loadConfig(env, { cwd: process.cwd(), hostname: os.hostname() });
  const secretsFile = path.join(config.dataDir, 'secrets.json');
  const secrets = existsSync(secretsFile)
    ? (JSON.parse(readFileSync(secretsFile, 'utf8')) as { operatorToken?: string })
    : {};
  const token = env.TWS_OPERATOR_TOKEN || config.operatorToken || secrets.operatorToken;
  if (!token)
    throw new CliError(
      `no operator token: set TWS_OPERATOR_TOKEN (and TWS_API_URL), or run this in the checkout where \`make start\` runs (${secretsFile} is missing)`,
      EXIT.usage,
    );
  return { url: (env.TWS_API_URL || localApiUrl(config.apiHost, config.apiPort)).replace(/\/+$/, ''), token };
}

async function call(t: Target, method: string, route: string, body?: unknown): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(t.url + route, {
      method,
      headers: {
        authorization: `Bearer ${t.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new CliError(
      `the API at ${t.url} does not answer (is \`make start\` running? TWS_API_URL moves it)`,
      EXIT.unavailable,
    );
  }
  if (res.ok) return res;
  const text = await res.text();
  let error: { code?: string; message?: string } = {};
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
  } catch {
    // not the contract's body
  }
  const reason = `${error.code ?? `HTTP ${res.status}`}${error.message ? `: ${error.message}` : ''}`;
  if (res.status === 404) throw new CliError(`not found (${reason})`, EXIT.notFound);
  if (res.status >= 500) throw new CliError(`the service failed (${reason})`, EXIT.unavailable);
  throw new CliError(`refused (${reason})`, EXIT.refused);
}

const json = async (t: Target, method: string, route: string, body?: unknown): Promise<any> =>
  (await call(t, method, route, body)).json();

/** Every page of a list route (`{ items, nextCursor }`). */
async function all(t: Target, route: string, query: Record<string, string | undefined>): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams(
      Object.entries({ ...query, limit: '200', ...(cursor ? { cursor } : {}) }).filter(
        (e): e is [string, string] => e[1] !== undefined,
      ),
    );
    const page = await json(t, 'GET', `${route}?${q}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/** Columns padded to their widest cell. */
function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = [
    columns,
    ...rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '-' : String(r[c])))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

interface Parsed {
  positional: string[];
  flags: Map<string, string | true>;
}

const VALUED = new Set(['--state', '--task', '--trigger', '--tail', '--host']);

function parse(argv: string[]): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-f') flags.set('--follow', true);
    else if (VALUED.has(a)) {
      const value = argv[++i];
      if (value === undefined) throw new CliError(`${a} needs a value\n${USAGE}`, EXIT.usage);
      flags.set(a, value);
    } else if (a.startsWith('-')) flags.set(a, true);
    else positional.push(a);
  }
  return { positional, flags };
}

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function one(p: Parsed, what: string): string {
  const [, id, ...rest] = p.positional;
  if (!id || rest.length > 0) throw new CliError(`give one ${what}\n${USAGE}`, EXIT.usage);
  if (!ID.test(id)) throw new CliError(`not a valid ${what}: ${id}`, EXIT.usage);
  return id;
}

export async function run(argv: string[], env: NodeJS.ProcessEnv, out: (s: string) => void): Promise<number> {
  const p = parse(argv);
  const asJson = p.flags.has('--json');
  const command = p.positional[0];
  const known = new Set(['--json', '--state', '--task', '--trigger', '--tail', '--follow', '--dry-run', '--host']);
  const unknown = [...p.flags.keys()].find((f) => !known.has(f));
  if (!command || command === 'help' || p.flags.has('--help')) {
    out(`${USAGE}\n`);
    return command ? EXIT.ok : EXIT.usage;
  }
  if (unknown) throw new CliError(`unknown option ${unknown}\n${USAGE}`, EXIT.usage);
  const print = (value: unknown, human: () => string) => out(`${asJson ? JSON.stringify(value, null, 2) : human()}\n`);

  switch (command) {
    case 'jobs': {
      const t = target(env);
      const flag = (name: string) =>
        typeof p.flags.get(name) === 'string' ? (p.flags.get(name) as string) : undefined;
      const jobs = await all(t, '/v1/cleanup-jobs', {
        state: flag('--state'),
        taskId: flag('--task'),
        trigger: flag('--trigger'),
      });
      print(jobs, () =>
        table(
          jobs.map((j) => ({ ...j, lastError: j.lastError, next: j.nextAttemptAt })),
          ['operationId', 'taskId', 'trigger', 'state', 'attempts', 'next', 'lastError'],
        ),
      );
      return EXIT.ok;
    }
    case 'job': {
      const job = await json(target(env), 'GET', `/v1/cleanup-jobs/${one(p, 'operation id')}`);
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
      const id = one(p, 'operation id');
      const res = await json(target(env), 'POST', `/v1/cleanup-jobs/${id}/${command}`);
      print(res, () => (command === 'retry' ? `retry requested for ${id}` : `${id} ${res.state}`));
      return EXIT.ok;
    }
    case 'abandon': {
      const res = await json(target(env), 'POST', `/v1/tasks/${one(p, 'task id')}/environment/reset`, {
        abandon: true,
      });
      print(res, () => `${res.operationId} ${res.state}: the environment is released; its files are left as they are`);
      return EXIT.ok;
    }
    case 'sessions': {
      const sessions = await all(target(env), `/v1/tasks/${one(p, 'task id')}/sessions`, {});
      print(sessions, () =>
        table(
          sessions.map((s) => ({ ...s, pid: s.execution?.pid, exit: s.execution?.exitCode ?? s.execution?.signal })),
          ['id', 'state', 'role', 'executorType', 'agentProfile', 'pid', 'exit'],
        ),
      );
      return EXIT.ok;
    }
    case 'logs': {
      const id = one(p, 'session id');
      const tail = p.flags.get('--tail');
      if (tail !== undefined && (typeof tail !== 'string' || !/^[0-9]{1,6}$/.test(tail)))
        throw new CliError('--tail takes a number of lines', EXIT.usage);
      const q = new URLSearchParams({
        ...(typeof tail === 'string' ? { tail } : {}),
        ...(p.flags.has('--follow') ? { follow: '1' } : {}),
      });
      const res = await call(target(env), 'GET', `/v1/sessions/${id}/logs?${q}`);
      // Streamed as it comes (with -f, until the agent ends).
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        out(decoder.decode(chunk, { stream: true }));
      return EXIT.ok;
    }
    case 'hosts': {
      const hosts = await json(target(env), 'GET', '/v1/hosts');
      const items = Array.isArray(hosts) ? hosts : hosts.items;
      print(items, () => table(items, ['hostId', 'live', 'lastSeenAt', 'workspaceRoot', 'executors']));
      return EXIT.ok;
    }
    case 'ssh-targets': {
      const targets = await all(target(env), '/v1/ssh-targets', {});
      print(targets, () => table(targets, ['id', 'name', 'host', 'port', 'user', 'workspaceRoot', 'hostId']));
      return EXIT.ok;
    }
    case 'sweep': {
      const dryRun = p.flags.has('--dry-run');
      const host = p.flags.get('--host');
      const res = await json(target(env), 'POST', '/v1/orphan-sweep', {
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
    default:
      throw new CliError(`unknown command ${command}\n${USAGE}`, EXIT.usage);
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

if (process.argv[1] && /client[\\/]cli\.ts$/.test(process.argv[1])) void main(process.argv.slice(2));

/**
 * How the CLI talks and reads (client/cli/cli.ts holds the commands, client/cli/cli-instance.ts finds
 * the API and its token): one request with the contract's error body turned into an exit code, every
 * page of a list, human tables, and the argument parser.
 */

/** Exit codes a script can trust. */
export const EXIT = { ok: 0, refused: 1, usage: 2, unavailable: 3, notFound: 4 } as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly code: number,
    /** The answer's error object (`{code, message, action, …}`), when the service refused with one. */
    readonly error?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** The API to call and the operator token for it (client/cli/cli-instance.ts chooses both). */
export interface Target {
  url: string;
  token: string;
  /** Why it may not answer, as its record says (a stopped instance). */
  down?: string;
}

export async function call(
  t: Target,
  method: string,
  route: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(t.url + route, {
      method,
      headers: {
        ...headers,
        authorization: `Bearer ${t.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new CliError(
      t.down
        ? `the API at ${t.url} does not answer: ${t.down} (make start starts it)`
        : `the API at ${t.url} does not answer (is \`make start\` running? --api / TWS_API_URL name another)`,
      EXIT.unavailable,
    );
  }
  if (res.ok) return res;
  const text = await res.text();
  let error: { code?: string; message?: string; [extra: string]: unknown } = {};
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
  } catch {
    // not the contract's body
  }
  const reason = `${error.code ?? `HTTP ${res.status}`}${error.message ? `: ${error.message}` : ''}`;
  const known = error.code === undefined ? undefined : error;
  if (res.status === 404) throw new CliError(`not found (${reason})`, EXIT.notFound, known);
  if (res.status >= 500) throw new CliError(`the service failed (${reason})`, EXIT.unavailable, known);
  // What to do about it, when the contract says (`action`): a person or a script acts on that.
  const action = typeof error.action === 'string' ? `; action: ${error.action}` : '';
  throw new CliError(`refused (${reason})${action}`, EXIT.refused, known);
}

export const json = async (
  t: Target,
  method: string,
  route: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<any> => (await call(t, method, route, body, headers)).json();

/** Every page of a list route (`{ items, nextCursor }`). */
export async function all(t: Target, route: string, query: Record<string, string | undefined>): Promise<any[]> {
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

/**
 * Text a user or an agent wrote (a title, a file name), made safe for a terminal: control
 * characters (an escape sequence would be run by the terminal) shown as `\uXXXX`.
 */
export const printable = (s: string): string =>
  s.replace(/[\u0000-\u001f\u007f-\u009f]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** Columns padded to their widest cell. */
export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = [
    columns,
    ...rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '-' : printable(String(r[c]))))),
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

export interface Parsed {
  positional: string[];
  /** Each option once: a valued option given twice keeps its last value. */
  flags: Map<string, string | true>;
  /** Every value of each valued option, in order (`--repository A --repository B`). */
  lists: Map<string, string[]>;
  /** What follows `--`, as it is (`launch <taskId> -- sh -c '…'`): never read as options. */
  rest: string[] | null;
}

const VALUED = new Set([
  '--state',
  '--task',
  '--trigger',
  '--tail',
  '--host',
  '--idle-for',
  '--limit',
  '--board',
  '--known-hosts',
  '--port',
  '--user',
  '--key',
  '--workspace-root',
  '--data-dir',
  '--api',
  '--strategy',
  '--message',
  '--repository',
  '--executor',
  '--profile',
  '--prompt',
  '--base',
  '--default-branch',
]);

export function parse(argv: string[], usage: string): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  const lists = new Map<string, string[]>();
  let rest: string[] | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      rest = argv.slice(i + 1);
      break;
    }
    if (a === '-f') flags.set('--follow', true);
    else if (VALUED.has(a)) {
      const value = argv[++i];
      if (value === undefined) throw new CliError(`${a} needs a value\n${usage}`, EXIT.usage);
      flags.set(a, value);
      lists.set(a, [...(lists.get(a) ?? []), value]);
    } else if (a.startsWith('-')) flags.set(a, true);
    else positional.push(a);
  }
  return { positional, flags, lists, rest };
}

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function one(p: Parsed, what: string, usage: string): string {
  const [, id, ...rest] = p.positional;
  if (!id || rest.length > 0) throw new CliError(`give one ${what}\n${usage}`, EXIT.usage);
  if (!ID.test(id)) throw new CliError(`not a valid ${what}: ${id}`, EXIT.usage);
  return id;
}

/** What a command group gets from the dispatcher (client/cli/cli.ts). */
export interface CommandContext {
  p: Parsed;
  asJson: boolean;
  usage: string;
  /** The API and the token of the role asked for (default: the command's own, client/cli/cli-usage.ts). */
  target: (role?: 'user' | 'operator') => Target;
  out: (s: string) => void;
}

/**
 * What a refusal prints on stdout with --json: the API's own body (`{ error: { code, message,
 * action, … } }`), for a script to act on; nothing for an error of the CLI's own (usage, no answer).
 * Said once, by the dispatcher (client/cli/cli.ts), for every command.
 */
export function refusalBody(err: unknown): string | undefined {
  if (!(err instanceof CliError) || !err.error || err.code === EXIT.usage) return undefined;
  return `${JSON.stringify({ error: err.error }, null, 2)}\n`;
}

/** The id at `positional[at]` (a subcommand's), the only one there. */
export function idAt(p: Parsed, at: number, what: string, usage: string): string {
  const id = p.positional[at];
  if (!id || p.positional.length > at + 1) throw new CliError(`give one ${what}\n${usage}`, EXIT.usage);
  if (!ID.test(id)) throw new CliError(`not a valid ${what}: ${id}`, EXIT.usage);
  return id;
}

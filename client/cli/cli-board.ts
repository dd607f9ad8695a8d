/**
 * `tws board`: the tasks by state, as the console's board groups them (console/src/board-columns.ts,
 * the same rule: needs attention first, then archived, running, merged, and idle for the rest),
 * from the lists the API gives (tasks, sessions starting, running or failed, cleanup jobs waiting
 * for an operator). `-f` follows `GET /v1/events` and prints the board again on each change; a
 * dropped feed is joined again after the server's `retry`, with `Last-Event-ID`, until Ctrl-C.
 */
import { all, call, CliError, EXIT, printable, type CommandContext, type Target } from './cli-io';

const COLUMNS = ['running', 'idle', 'attention', 'merged', 'archived'] as const;
type Column = (typeof COLUMNS)[number];
const TITLES: Record<Column, string> = {
  running: 'running',
  idle: 'idle',
  attention: 'needs attention',
  merged: 'merged',
  archived: 'archived',
};

interface BoardTask {
  id: string;
  title: string;
  state: string;
  createdAt: string;
  merged: { at: string } | null;
}
type Board = Record<Column, (BoardTask & { why?: string })[]>;

async function readBoard(t: Target, boardId: string | undefined): Promise<Board> {
  const [active, archived, sessions, jobs] = await Promise.all([
    all(t, '/v1/tasks', { archived: 'false', boardId }),
    all(t, '/v1/tasks', { archived: 'true', boardId }),
    Promise.all(['starting', 'running', 'failed'].map((state) => all(t, '/v1/sessions', { state }))),
    all(t, '/v1/cleanup-jobs', { state: 'needs_operator' }),
  ]);
  const working = new Set<string>();
  const newest = new Map<string, { state: string; createdAt: string }>();
  for (const s of sessions.flat() as { taskId: string; state: string; createdAt: string }[]) {
    if (s.state === 'starting' || s.state === 'running') working.add(s.taskId);
    const seen = newest.get(s.taskId);
    if (!seen || seen.createdAt < s.createdAt) newest.set(s.taskId, s);
  }
  const attention = new Map<string, string>();
  for (const [taskId, s] of newest)
    if (s.state === 'failed' && !working.has(taskId)) attention.set(taskId, 'its launch failed');
  for (const job of jobs as { taskId: string }[]) attention.set(job.taskId, 'a cleanup waits for an operator');
  const board: Board = { running: [], idle: [], attention: [], merged: [], archived: [] };
  for (const task of [...active, ...archived] as BoardTask[]) {
    const column: Column = attention.has(task.id)
      ? 'attention'
      : task.state === 'archived'
        ? 'archived'
        : working.has(task.id)
          ? 'running'
          : task.merged
            ? 'merged'
            : 'idle';
    board[column].push({ ...task, ...(attention.has(task.id) ? { why: attention.get(task.id) } : {}) });
  }
  for (const column of COLUMNS) board[column].sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
  return board;
}

function boardText(board: Board): string {
  return COLUMNS.map((column) =>
    [
      `${TITLES[column]} (${board[column].length})`,
      ...board[column].map((t) => `  ${t.id}  ${printable(t.title)}${t.why ? `  (${t.why})` : ''}`),
    ].join('\n'),
  ).join('\n');
}

export async function boardCommand(c: CommandContext): Promise<number> {
  const { p, asJson, usage, out } = c;
  if (p.positional.length > 1) throw new CliError(`board takes no argument\n${usage}`, EXIT.usage);
  const boardId = typeof p.flags.get('--board') === 'string' ? (p.flags.get('--board') as string) : undefined;
  const t = c.target();
  // Followed: one JSON object a line (--json), or the board under a line that says when it was read.
  const show = async () => {
    const board = await readBoard(t, boardId);
    if (!p.flags.has('--follow')) out(`${asJson ? JSON.stringify(board, null, 2) : boardText(board)}\n`);
    else out(asJson ? `${JSON.stringify(board)}\n` : `--- ${new Date().toISOString()}\n${boardText(board)}\n`);
  };
  await show();
  if (!p.flags.has('--follow')) return EXIT.ok;
  await followEvents(t, show);
  return EXIT.ok;
}

const DEFAULT_RETRY_MS = 2000;
/** Changes that come together (a launch writes several rows) give one reprint. */
const SETTLE_MS = 200;

/** Reads the feed for ever: each change (or reset) prints the board again; a lost feed is joined again. */
async function followEvents(t: Target, show: () => Promise<void>): Promise<never> {
  let lastEventId: string | null = null;
  let retryMs = DEFAULT_RETRY_MS;
  let pending: NodeJS.Timeout | null = null;
  let printing = Promise.resolve();
  const changed = () => {
    if (pending) clearTimeout(pending);
    pending = setTimeout(() => {
      pending = null;
      // A failed read is said, so the board above is not taken for today's; the next change reads again.
      printing = printing.then(show).catch((err: unknown) => {
        process.stderr.write(
          `board: could not read the tasks (${err instanceof Error ? err.message : String(err)}); the board above may be out of date\n`,
        );
      });
    }, SETTLE_MS);
  };
  for (;;) {
    try {
      const res = await call(t, 'GET', '/v1/events', undefined, {
        accept: 'text/event-stream',
        ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
      });
      // Joined again without an id to resume from: what was missed is read anew.
      if (!lastEventId) changed();
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          for (const line of frame.split('\n')) {
            const [field, ...value] = line.split(':');
            const text = value.join(':').replace(/^ /, '');
            if (field === 'id') lastEventId = text;
            else if (field === 'event') event = text;
            else if (field === 'retry' && /^\d+$/.test(text)) retryMs = Number(text);
          }
          if (event === 'change' || event === 'reset') changed();
        }
      }
    } catch (err) {
      // Refused (a token that may not read it): said once, not retried.
      if (err instanceof CliError && err.code !== EXIT.unavailable) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}

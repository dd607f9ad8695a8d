/**
 * The `tws` commands of finishing a task: preview, merge, merges, undo-merge and rebase, each one
 * route of client/gateway/routes/merges.ts. A refusal exits 1 with its code, message and action
 * (and the conflicting files); with `--json` the answer, a refusal's body too, is printed as is.
 */
import { all, CliError, EXIT, json, table, type Parsed, type Target } from './cli-io';

export const FINISHING_COMMANDS = new Set(['preview', 'merge', 'merges', 'undo-merge', 'rebase']);

const STRATEGIES = ['squash', 'merge', 'fast_forward', 'rebase'];

/** How often a merge still running after the request's wait is asked again. */
const POLL_MS = 1000;
/** How long a merge just started may be missing from its own route (its record not yet written). */
const MISSING_MS = 30_000;

export interface FinishingContext {
  p: Parsed;
  asJson: boolean;
  usage: string;
  target: () => Target;
  one: (what: string) => string;
  out: (s: string) => void;
}

type Commit = string | null;

interface MergeView {
  operationId: string;
  strategy: string;
  state: string;
  repositories: { repositoryId: string; baseBranch: string; before: Commit; after: Commit }[];
  error?: Record<string, unknown>;
}

const short = (commit: Commit): string => (commit ? commit.slice(0, 7) : '-');

/** A refusal as a person reads it: its code and message, what to do, and where. */
function refusalText(error: Record<string, unknown>, lead = 'refused'): string {
  const lines = [`${lead} (${String(error.code)}: ${String(error.message ?? '')})`];
  if (typeof error.action === 'string') lines.push(`action: ${error.action}`);
  for (const c of Array.isArray(error.conflicts)
    ? (error.conflicts as { repositoryId: string; paths: string[] }[])
    : [])
    lines.push(`conflicts in ${c.repositoryId}: ${c.paths.join(', ')}`);
  if (Array.isArray(error.repositoryIds)) lines.push(`repositories: ${error.repositoryIds.join(', ')}`);
  if (typeof error.reason === 'string') lines.push(`reason: ${error.reason}`);
  return lines.join('\n');
}

/** One finishing command; its exit code, or a CliError (a refusal: exit 1 with the refusal's text). */
export async function finishing(command: string, c: FinishingContext): Promise<number> {
  const { p, asJson, out } = c;
  const print = (value: unknown, human: () => string) => out(`${asJson ? JSON.stringify(value, null, 2) : human()}\n`);
  const text = (name: string) => (typeof p.flags.get(name) === 'string' ? (p.flags.get(name) as string) : undefined);
  const strategy = text('--strategy');
  if (strategy !== undefined && !STRATEGIES.includes(strategy))
    throw new CliError(`--strategy takes one of ${STRATEGIES.join(', ')}\n${c.usage}`, EXIT.usage);
  const repositoryIds = p.lists.get('--repository');
  // A refusal told in its own words on stderr, exit 1 (its body on stdout for --json: cli.ts).
  const answered = async <T>(request: () => Promise<T>): Promise<T> => {
    try {
      return await request();
    } catch (err) {
      if (!(err instanceof CliError) || err.code !== EXIT.refused || !err.error) throw err;
      throw new CliError(refusalText(err.error), EXIT.refused, err.error);
    }
  };

  switch (command) {
    case 'preview': {
      const id = c.one('task id');
      const q = strategy ? `?strategy=${strategy}` : '';
      const res = await answered(() => json(c.target(), 'GET', `/v1/tasks/${id}/merge-preview${q}`));
      print(res, () =>
        [
          `strategy: ${res.strategy}`,
          table(
            res.repositories.map((r: { conflicts?: string[]; blockedBy?: string }) => ({
              ...r,
              detail: r.conflicts?.join(', ') ?? r.blockedBy,
            })),
            ['repositoryId', 'outcome', 'detail'],
          ),
        ].join('\n'),
      );
      return EXIT.ok;
    }
    case 'merge': {
      const id = c.one('task id');
      const body = {
        strategy: strategy ?? 'squash',
        ...(text('--message') === undefined ? {} : { message: text('--message') }),
        ...(repositoryIds ? { repositoryIds } : {}),
        ...(p.flags.has('--commit-uncommitted') ? { commitUncommitted: true } : {}),
        ...(p.flags.has('--stop-agents') ? { stopAgents: true } : {}),
        ...(p.flags.has('--archive') ? { archive: true } : {}),
      };
      const started = await answered(() => json(c.target(), 'POST', `/v1/tasks/${id}/merge`, body, { prefer: 'wait' }));
      // 202: still running after the request's wait (queued behind another merge, say): asked again until it ends.
      const merge: MergeView = 'state' in started ? started : await mergeEnded(c.target(), started.operationId);
      print(merge, () => mergeReport(merge));
      return endOf(merge);
    }
    case 'merges': {
      const merges: MergeView[] = await all(c.target(), `/v1/tasks/${c.one('task id')}/merges`, {});
      print(merges, () =>
        table(
          merges.map((m) => ({ ...m, error: m.error?.code })),
          ['operationId', 'strategy', 'state', 'createdAt', 'finishedAt', 'undoneAt', 'error'],
        ),
      );
      return EXIT.ok;
    }
    case 'undo-merge': {
      const id = c.one('operation id');
      const merge: MergeView = await answered(() => json(c.target(), 'POST', `/v1/merges/${id}/undo`));
      print(merge, () => mergeReport(merge));
      return endOf(merge);
    }
    case 'rebase': {
      const id = c.one('task id');
      const res = await answered(() =>
        json(c.target(), 'POST', `/v1/tasks/${id}/rebase`, {
          ...(repositoryIds ? { repositoryIds } : {}),
          ...(p.flags.has('--stop-agents') ? { stopAgents: true } : {}),
        }),
      );
      print(res, () =>
        [
          'rebased:',
          table(
            res.repositories.map((r: { repositoryId: string; before: Commit; after: Commit }) => ({
              repositoryId: r.repositoryId,
              branch:
                r.before === r.after
                  ? `${short(r.after)} (already on its base)`
                  : `${short(r.before)} → ${short(r.after)}`,
            })),
            ['repositoryId', 'branch'],
          ),
        ].join('\n'),
      );
      return EXIT.ok;
    }
    default:
      throw new CliError(`unknown command ${command}\n${c.usage}`, EXIT.usage);
  }
}

/** The merge asked for until it is no longer running. */
async function mergeEnded(t: Target, operationId: string): Promise<MergeView> {
  const since = Date.now();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    try {
      const merge: MergeView = await json(t, 'GET', `/v1/merges/${operationId}`);
      if (merge.state !== 'running') return merge;
    } catch (err) {
      if (!(err instanceof CliError) || err.code !== EXIT.notFound || Date.now() - since > MISSING_MS) throw err;
    }
  }
}

/** What a merge (or its undo) did: its state, and each repository's base before → after. */
function mergeReport(m: MergeView): string {
  return [
    `${m.state} (${m.strategy}), operation ${m.operationId}`,
    table(
      m.repositories.map((r) => ({
        repositoryId: r.repositoryId,
        base: r.baseBranch,
        moved:
          m.state === 'undone' ? `${short(r.after)} → ${short(r.before)}` : `${short(r.before)} → ${short(r.after)}`,
      })),
      ['repositoryId', 'base', 'moved'],
    ),
  ].join('\n');
}

/** 0 when it merged (or was undone); else 1 with its error, as a refusal answered at once would say it. */
function endOf(m: MergeView): number {
  if (m.state === 'merged' || m.state === 'undone') return EXIT.ok;
  const error = m.error ?? { code: m.state, message: 'The merge did not complete.' };
  const lead = m.state === 'needs_operator' ? 'needs an operator' : 'refused';
  // The resource is already on stdout (as is, with --json: its error in it); the reason goes to
  // stderr, and no error body follows it on stdout (a second JSON document would break the first).
  throw new CliError(refusalText(error, lead), EXIT.refused);
}

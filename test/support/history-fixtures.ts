/**
 * The recorded workflow histories under test/histories: one JSON file per case, named
 * `<workflowType>-<case>.json`. The workflow type is read from the history itself (its first
 * event), so a file cannot claim a type it does not hold; the name only has to agree with it.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { History } from '@temporalio/worker';

export const historiesDir = path.join(__dirname, '..', 'histories');
const repositoryRoot = path.join(__dirname, '..', '..');

export interface HistoryFixture {
  file: string;
  workflowType: string;
  history: History;
}

export function workflowTypeOf(history: History): string {
  const type = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
  if (!type) throw new Error('the history does not begin with a workflow start');
  return type;
}

export function readFixtures(): HistoryFixture[] {
  return readdirSync(historiesDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const history = historyFromJSON(JSON.parse(readFileSync(path.join(historiesDir, file), 'utf8')));
      return { file, workflowType: workflowTypeOf(history), history };
    });
}

/** The workflow types the worker registers: every function workflows/index.ts exports. */
export async function exportedWorkflowTypes(): Promise<string[]> {
  const workflows: Record<string, unknown> = await import('../../workflows');
  return Object.entries(workflows)
    .filter(([, value]) => typeof value === 'function')
    .map(([name]) => name)
    .sort();
}

/**
 * Writes the history of `workflowId` (its latest run, once closed) as `<name>.json`. The name
 * must begin with the workflow type the history holds. Stack traces of failures name this
 * checkout's folder: it is written as `<repo>` (replay never reads a stack trace).
 */
export async function recordHistory(temporal: Client, name: string, workflowId: string): Promise<History> {
  const handle = temporal.workflow.getHandle(workflowId);
  await handle.result().catch(() => {}); // closed, whatever its outcome: a refusal is a case too
  const history = await handle.fetchHistory();
  const type = workflowTypeOf(history);
  if (!name.startsWith(`${type}-`))
    throw new Error(`fixture ${name} holds a ${type} history: its name must begin with "${type}-"`);
  writeFileSync(
    path.join(historiesDir, `${name}.json`),
    historyToJSON(history).split(`${repositoryRoot}/`).join('<repo>/'),
  );
  return history;
}

/** The ids of closed workflows a visibility query finds, polled until at least one is listed (visibility lags a little). */
export async function closedWorkflowIds(temporal: Client, query: string, timeoutMs = 30_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ids: string[] = [];
    for await (const wf of temporal.workflow.list({ query: `${query} AND ExecutionStatus != 'Running'` }))
      ids.push(wf.workflowId);
    if (ids.length > 0) return ids;
    if (Date.now() > deadline) throw new Error(`no closed workflow for ${query}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The board's columns: which one each task goes in, from what the API's lists say about it (the
 * tasks, the sessions at work or failed, the cleanup jobs waiting for an operator). Pure, so the
 * rule can be read and tested beside the spec's list: running, idle, needs attention, merged,
 * archived.
 */
export const COLUMNS = ['running', 'idle', 'attention', 'merged', 'archived'] as const;
export type Column = (typeof COLUMNS)[number];

export const COLUMN_TITLES: Record<Column, string> = {
  running: 'Running',
  idle: 'Idle',
  attention: 'Needs attention',
  merged: 'Merged',
  archived: 'Archived',
};

export interface BoardTask {
  id: string;
  title: string;
  state: 'active' | 'archived';
  boardId: string | null;
  createdAt: string;
  merged: { at: string; operationId: string } | null;
}

/** What the other lists say, by task id. */
export interface BoardFacts {
  /** Tasks with a session starting or running. */
  working: ReadonlySet<string>;
  /** Why a task needs a person, by task id (a failed launch, a cleanup waiting for an operator, a refused merge). */
  attention: ReadonlyMap<string, string>;
}

/**
 * A task needing a person shows there first, whatever else is true of it; then archived ones;
 * then those with an agent at work; then merged; every other active task is idle.
 */
function columnOf(task: BoardTask, facts: BoardFacts): Column {
  if (facts.attention.has(task.id)) return 'attention';
  if (task.state === 'archived') return 'archived';
  if (facts.working.has(task.id)) return 'running';
  if (task.merged) return 'merged';
  return 'idle';
}

/** The tasks of each column, newest first, each column's order stable for equal times. */
export function groupIntoColumns(tasks: readonly BoardTask[], facts: BoardFacts): Record<Column, BoardTask[]> {
  const columns: Record<Column, BoardTask[]> = { running: [], idle: [], attention: [], merged: [], archived: [] };
  for (const task of tasks) columns[columnOf(task, facts)].push(task);
  for (const column of COLUMNS)
    columns[column].sort((a, b) =>
      a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1,
    );
  return columns;
}

export interface SessionFact {
  taskId: string;
  state: string;
  createdAt: string;
}

/**
 * The facts from the sessions and the cleanup jobs: a task is at work while any session is
 * starting or running; a launch needs attention when the task's newest session failed.
 */
export function factsFrom(sessions: readonly SessionFact[], jobsWaiting: readonly { taskId: string }[]): BoardFacts {
  const working = new Set<string>();
  const newest = new Map<string, SessionFact>();
  for (const session of sessions) {
    if (session.state === 'starting' || session.state === 'running') working.add(session.taskId);
    const seen = newest.get(session.taskId);
    if (!seen || seen.createdAt < session.createdAt) newest.set(session.taskId, session);
  }
  const attention = new Map<string, string>();
  for (const [taskId, session] of newest)
    if (session.state === 'failed' && !working.has(taskId)) attention.set(taskId, 'Its launch failed');
  for (const job of jobsWaiting) attention.set(job.taskId, 'A cleanup waits for an operator');
  return { working, attention };
}

/**
 * The board's columns: which one each task goes in, from what the task list says of each task
 * (`activity`, `attention`, `merged`, its state). Pure, so the rule can be read and tested beside
 * the spec's list: running, idle, needs attention, merged, archived.
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

type AttentionReason =
  'cleanup_needs_operator' | 'merge_needs_operator' | 'merge_conflict' | 'restore_conflict' | 'launch_failed';

/** Why a task needs a person, in words (the API says which; the card says it so). */
const ATTENTION_WORDS: Record<AttentionReason, string> = {
  cleanup_needs_operator: 'A cleanup waits for an operator',
  merge_needs_operator: 'Its merge waits for an operator',
  merge_conflict: 'Its merge was refused: a conflict',
  restore_conflict: 'Its saved work did not apply: a conflict',
  launch_failed: 'Its launch failed',
};

/** A reason this console does not know yet (a newer service) is still a reason: said plainly. */
export const attentionWords = (reason: string): string =>
  ATTENTION_WORDS[reason as AttentionReason] ?? 'It needs attention';

export interface BoardTask {
  id: string;
  title: string;
  state: 'active' | 'archived';
  boardId: string | null;
  createdAt: string;
  merged: { at: string; operationId: string } | null;
  activity: 'working' | 'idle';
  attention: { reason: string; operationId: string | null; sessionId: string | null } | null;
}

/**
 * A task needing a person shows there first, whatever else is true of it; then archived ones;
 * then those with an agent at work; then merged; every other active task is idle.
 */
function columnOf(task: BoardTask): Column {
  if (task.attention) return 'attention';
  if (task.state === 'archived') return 'archived';
  if (task.activity === 'working') return 'running';
  if (task.merged) return 'merged';
  return 'idle';
}

/** Newest first; equal times by id, so each column's order is stable. */
export const newestFirst = (a: BoardTask, b: BoardTask): number =>
  a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;

/** The tasks of each column, newest first. */
export function groupIntoColumns(tasks: readonly BoardTask[]): Record<Column, BoardTask[]> {
  const columns: Record<Column, BoardTask[]> = { running: [], idle: [], attention: [], merged: [], archived: [] };
  for (const task of tasks) columns[columnOf(task)].push(task);
  for (const column of COLUMNS) columns[column].sort(newestFirst);
  return columns;
}

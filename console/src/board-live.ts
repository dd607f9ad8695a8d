/**
 * The board kept live one task at a time: a change on the feed names a task, the board reads that
 * task alone (`GET /v1/tasks/:id`) and puts what it read in its list: in if it is new and matches the
 * filters, changed where it was, out once it is gone or no longer matches. Pure, so the rule can be
 * tested without a browser; use-board-tasks.ts does the reading.
 */
import { newestFirst, type BoardTask } from './board-columns';
import type { ChangeEvent } from './sse-parser';

/** The board's filters, as the list is asked with them ('' for none). */
export interface BoardFilter {
  boardId: string;
  repositoryId: string;
}

/** What `GET /v1/tasks/:id` answered: the task (with its repositories), or that it is gone (404). */
export type TaskRead =
  { found: true; task: BoardTask & { repositories: { repositoryId: string }[] } } | { found: false };

/** The query of the task list for these filters. */
export function listPath(filter: BoardFilter): string {
  const query = [
    filter.boardId && `boardId=${encodeURIComponent(filter.boardId)}`,
    filter.repositoryId && `repositoryId=${encodeURIComponent(filter.repositoryId)}`,
  ].filter(Boolean);
  return `/v1/tasks${query.length ? `?${query.join('&')}` : ''}`;
}

/**
 * The task a change is about, when it may change what the board shows of one: a task's own change,
 * a session's (at work, a failed launch), a merge's, a cleanup job's. An execution's changes
 * nothing of a card (its session's state does); one without a task id names nothing to read.
 */
export function taskOfChange(change: ChangeEvent): string | null {
  if (change.kind === 'execution') return null;
  return change.taskId;
}

/** Whether the task as read belongs on a board with these filters (the list's own filters). */
function matchesFilter(read: Extract<TaskRead, { found: true }>['task'], filter: BoardFilter): boolean {
  if (filter.boardId && read.boardId !== filter.boardId) return false;
  if (filter.repositoryId && !read.repositories.some((r) => r.repositoryId === filter.repositoryId)) return false;
  return true;
}

/** The card's own fields of a task read (the one-task view carries more than the board keeps). */
export const cardOf = (task: BoardTask): BoardTask => ({
  id: task.id,
  title: task.title,
  state: task.state,
  boardId: task.boardId,
  createdAt: task.createdAt,
  merged: task.merged,
  activity: task.activity,
  attention: task.attention,
});

/** The list with one task's read applied; the same array when nothing changed (no render for it). */
export function patchTask(
  tasks: readonly BoardTask[],
  taskId: string,
  read: TaskRead,
  filter: BoardFilter,
): readonly BoardTask[] {
  const at = tasks.findIndex((t) => t.id === taskId);
  if (!read.found || !matchesFilter(read.task, filter)) {
    if (at < 0) return tasks;
    return [...tasks.slice(0, at), ...tasks.slice(at + 1)];
  }
  const card = cardOf(read.task);
  if (at >= 0) {
    if (JSON.stringify(tasks[at]) === JSON.stringify(card)) return tasks;
    const next = [...tasks];
    next[at] = card;
    return next;
  }
  // New to the board: in the list's own order (newest first), so a later full read agrees.
  const next = [...tasks];
  const before = next.findIndex((t) => newestFirst(card, t) < 0);
  next.splice(before < 0 ? next.length : before, 0, card);
  return next;
}

/**
 * The board's columns (console/src/board-columns.ts): each task in one column, by the spec's list,
 * from the task's own `activity` and `attention`; and the board kept live one task at a time
 * (console/src/board-live.ts): a task read after a change goes in, changes or goes out of the list.
 */
import { describe, expect, it } from 'vitest';
import { attentionWords, groupIntoColumns, type BoardTask } from '../console/src/board-columns';
import { listPath, patchTask, taskOfChange, type TaskRead } from '../console/src/board-live';

const task = (id: string, over: Partial<BoardTask> = {}): BoardTask => ({
  id,
  title: `task ${id}`,
  state: 'active',
  boardId: null,
  createdAt: `2026-01-01T00:00:0${id.length}.000Z`,
  merged: null,
  activity: 'idle',
  attention: null,
  ...over,
});
const ids = (tasks: readonly BoardTask[]) => tasks.map((t) => t.id);
const needs = (reason: string) => ({ reason, operationId: null, sessionId: null });
const found = (t: BoardTask, repositoryIds: string[] = ['r1']): TaskRead => ({
  found: true,
  task: { ...t, repositories: repositoryIds.map((repositoryId) => ({ repositoryId })) },
});
const ALL = { boardId: '', repositoryId: '' };

describe('the board groups tasks into columns [console board]', () => {
  it('running, idle, needs attention, merged and archived, attention first whatever else holds', () => {
    const merged = { at: '2026-01-02T00:00:00Z', operationId: 'op' };
    const columns = groupIntoColumns([
      task('run', { activity: 'working' }),
      task('fail', { attention: needs('launch_failed') }),
      task('clash', { attention: needs('merge_conflict'), merged }),
      task('stuck', { state: 'archived', attention: needs('cleanup_needs_operator') }),
      task('busy', { activity: 'working', attention: needs('restore_conflict') }),
      task('old', { state: 'archived', merged }),
      task('done', { merged }),
      task('calm'),
    ]);
    expect(ids(columns.running)).toEqual(['run']);
    expect(ids(columns.attention).sort()).toEqual(['busy', 'clash', 'fail', 'stuck']);
    expect(ids(columns.archived)).toEqual(['old']);
    expect(ids(columns.merged)).toEqual(['done']);
    expect(ids(columns.idle)).toEqual(['calm']);
  });

  it('says each reason in words, and one it does not know as needing attention', () => {
    expect(attentionWords('merge_conflict')).toBe('Its merge was refused: a conflict');
    expect(attentionWords('restore_conflict')).toBe('Its saved work did not apply: a conflict');
    expect(attentionWords('cleanup_needs_operator')).toBe('A cleanup waits for an operator');
    expect(attentionWords('merge_needs_operator')).toBe('Its merge waits for an operator');
    expect(attentionWords('launch_failed')).toBe('Its launch failed');
    expect(attentionWords('something_new')).toBe('It needs attention');
  });

  it('puts each of a thousand tasks in exactly one column, newest first, in well under the time of a frame', () => {
    const tasks = Array.from({ length: 1000 }, (_, i) =>
      task(`t${i}`, {
        createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
        state: i % 5 === 0 ? 'archived' : 'active',
        merged: i % 7 === 0 ? { at: '2026-02-01T00:00:00Z', operationId: `m${i}` } : null,
        activity: i % 3 === 0 ? 'working' : 'idle',
        attention: i % 11 === 0 ? needs('launch_failed') : null,
      }),
    );
    const started = performance.now();
    const columns = groupIntoColumns(tasks);
    expect(performance.now() - started).toBeLessThan(50);
    const all = Object.values(columns).flat();
    expect(all).toHaveLength(1000);
    expect(new Set(ids(all)).size).toBe(1000);
    for (const column of Object.values(columns))
      for (let i = 1; i < column.length; i++) expect(column[i - 1]!.createdAt >= column[i]!.createdAt).toBe(true);
  });
});

describe('the board kept live one task at a time [console board]', () => {
  const list = [
    task('c', { createdAt: '2026-01-03T00:00:00Z' }),
    task('b', { createdAt: '2026-01-02T00:00:00Z' }),
    task('a', { createdAt: '2026-01-01T00:00:00Z' }),
  ];

  it('a new task goes in at its place, newest first; a changed one is replaced where it was', () => {
    const newer = task('d', { createdAt: '2026-01-04T00:00:00Z' });
    expect(ids(patchTask(list, 'd', found(newer), ALL))).toEqual(['d', 'c', 'b', 'a']);
    const between = task('bb', { createdAt: '2026-01-02T12:00:00Z' });
    expect(ids(patchTask(list, 'bb', found(between), ALL))).toEqual(['c', 'bb', 'b', 'a']);
    const clash = { ...list[1]!, attention: needs('merge_conflict') };
    const patched = patchTask(list, 'b', found(clash), ALL);
    expect(ids(patched)).toEqual(['c', 'b', 'a']);
    expect(patched[1]!.attention).toEqual(needs('merge_conflict'));
    expect(list[1]!.attention).toBeNull();
  });

  it('keeps only the card fields of the one-task view, and answers the same list when nothing changed', () => {
    const patched = patchTask(list, 'b', found(list[1]!), ALL);
    expect(patched).toBe(list);
    const inserted = patchTask([], 'x', found(task('x')), ALL);
    expect(Object.keys(inserted[0]!).sort()).toEqual(
      ['activity', 'attention', 'boardId', 'createdAt', 'id', 'merged', 'state', 'title'].sort(),
    );
  });

  it('a task gone (404) or no longer matching the filters goes out; one that never matched stays out', () => {
    expect(ids(patchTask(list, 'b', { found: false }, ALL))).toEqual(['c', 'a']);
    expect(patchTask(list, 'zz', { found: false }, ALL)).toBe(list);
    const onBoard = { boardId: 'board-1', repositoryId: '' };
    expect(ids(patchTask(list, 'b', found(task('b', { boardId: 'board-2' })), onBoard))).toEqual(['c', 'a']);
    expect(ids(patchTask(list, 'n', found(task('n', { boardId: 'board-1' })), onBoard))).toContain('n');
    const inRepo = { boardId: '', repositoryId: 'r9' };
    expect(patchTask(list, 'n', found(task('n'), ['r1']), inRepo)).toBe(list);
    expect(ids(patchTask(list, 'n', found(task('n'), ['r1', 'r9']), inRepo))).toContain('n');
  });

  it('reads the task a change names, except for an execution (its session tells) or a change without one', () => {
    const change = (kind: any, taskId: string | null) => ({
      kind,
      id: 'e',
      taskId,
      change: 'updated' as const,
      state: null,
    });
    expect(taskOfChange(change('task', 't1'))).toBe('t1');
    expect(taskOfChange(change('session', 't1'))).toBe('t1');
    expect(taskOfChange(change('merge', 't1'))).toBe('t1');
    expect(taskOfChange(change('cleanup_job', 't1'))).toBe('t1');
    expect(taskOfChange(change('execution', 't1'))).toBeNull();
    expect(taskOfChange(change('session', null))).toBeNull();
  });

  it('asks the list with the filters it has, escaped', () => {
    expect(listPath(ALL)).toBe('/v1/tasks');
    expect(listPath({ boardId: 'b1', repositoryId: '' })).toBe('/v1/tasks?boardId=b1');
    expect(listPath({ boardId: 'b1', repositoryId: 'r&x' })).toBe('/v1/tasks?boardId=b1&repositoryId=r%26x');
  });
});

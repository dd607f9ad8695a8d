/** The board's columns (console/src/board-columns.ts): each task in one column, by the spec's list. */
import { describe, expect, it } from 'vitest';
import { factsFrom, groupIntoColumns, type BoardTask } from '../console/src/board-columns';

const task = (id: string, over: Partial<BoardTask> = {}): BoardTask => ({
  id,
  title: `task ${id}`,
  state: 'active',
  boardId: null,
  createdAt: `2026-01-01T00:00:0${id.length}.000Z`,
  merged: null,
  ...over,
});
const ids = (tasks: BoardTask[]) => tasks.map((t) => t.id);

describe('the board groups tasks into columns [console board]', () => {
  it('running, idle, needs attention, merged and archived, attention first whatever else holds', () => {
    const facts = factsFrom(
      [
        { taskId: 'run', state: 'running', createdAt: '2026-01-01T00:00:01Z' },
        { taskId: 'start', state: 'starting', createdAt: '2026-01-01T00:00:01Z' },
        { taskId: 'fail', state: 'failed', createdAt: '2026-01-01T00:00:01Z' },
        // A failed launch followed by one that runs is no longer a problem.
        { taskId: 'retried', state: 'failed', createdAt: '2026-01-01T00:00:01Z' },
        { taskId: 'retried', state: 'running', createdAt: '2026-01-01T00:00:02Z' },
      ],
      [{ taskId: 'stuck' }],
    );
    const merged = { at: '2026-01-02T00:00:00Z', operationId: 'op' };
    const columns = groupIntoColumns(
      [
        task('run'),
        task('start'),
        task('fail'),
        task('retried'),
        task('stuck', { state: 'archived' }),
        task('old', { state: 'archived', merged }),
        task('done', { merged }),
        task('calm'),
      ],
      facts,
    );
    expect(ids(columns.running).sort()).toEqual(['retried', 'run', 'start']);
    expect(ids(columns.attention).sort()).toEqual(['fail', 'stuck']);
    expect(ids(columns.archived)).toEqual(['old']);
    expect(ids(columns.merged)).toEqual(['done']);
    expect(ids(columns.idle)).toEqual(['calm']);
    expect(facts.attention.get('stuck')).toBe('A cleanup waits for an operator');
    expect(facts.attention.get('fail')).toBe('Its launch failed');
  });

  it('puts each of a thousand tasks in exactly one column, newest first, in well under the time of a frame', () => {
    const tasks = Array.from({ length: 1000 }, (_, i) =>
      task(`t${i}`, {
        createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
        state: i % 5 === 0 ? 'archived' : 'active',
        merged: i % 7 === 0 ? { at: '2026-02-01T00:00:00Z', operationId: `m${i}` } : null,
      }),
    );
    const facts = factsFrom(
      tasks.filter((_, i) => i % 3 === 0).map((t) => ({ taskId: t.id, state: 'running', createdAt: t.createdAt })),
      [],
    );
    const started = performance.now();
    const columns = groupIntoColumns(tasks, facts);
    expect(performance.now() - started).toBeLessThan(50);
    const all = Object.values(columns).flat();
    expect(all).toHaveLength(1000);
    expect(new Set(ids(all)).size).toBe(1000);
    for (const column of Object.values(columns))
      for (let i = 1; i < column.length; i++) expect(column[i - 1]!.createdAt >= column[i]!.createdAt).toBe(true);
  });
});

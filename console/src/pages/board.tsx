/**
 * The board: every task in its column (running, idle, needs attention, merged, archived), from
 * the task list alone (each task says whether an agent is at work and why it needs a person);
 * filtered by board (the API's filter) and repository; kept live one changed task at a time.
 */
import { useMemo, useState } from 'preact/hooks';
import { allPages } from '../api';
import { COLUMNS, groupIntoColumns } from '../board-columns';
import { BoardColumn } from '../parts/board-column';
import { MaybeError } from '../parts/error-view';
import { NewTaskForm } from '../parts/new-task-form';
import { useBoardTasks } from '../use-board-tasks';
import { useSession } from '../session-context';
import { useResource } from '../use-resource';

interface Named {
  id: string;
  name: string;
}

export function Board() {
  const { api } = useSession();
  const [boardId, setBoardId] = useState('');
  const [repositoryId, setRepositoryId] = useState('');
  const [creating, setCreating] = useState(false);

  const catalog = useResource(
    async () => ({
      boards: await allPages<Named>(api, '/v1/boards'),
      repositories: await allPages<Named>(api, '/v1/repositories'),
    }),
    [api],
    () => false,
  );
  const board = useBoardTasks({ boardId, repositoryId });
  const columns = useMemo(() => (board.tasks ? groupIntoColumns(board.tasks) : null), [board.tasks]);

  return (
    <section class="board">
      <div class="toolbar">
        <label>
          Board{' '}
          <select data-testid="filter-board" value={boardId} onChange={(e) => setBoardId(e.currentTarget.value)}>
            <option value="">All boards</option>
            {catalog.value?.boards.map((b) => (
              <option key={b.id} value={b.id}>
                {b.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Repository{' '}
          <select
            data-testid="filter-repository"
            value={repositoryId}
            onChange={(e) => setRepositoryId(e.currentTarget.value)}
          >
            <option value="">All repositories</option>
            {catalog.value?.repositories.map((r) => (
              <option key={r.id} value={r.id}>
                {r.name}
              </option>
            ))}
          </select>
        </label>
        <button type="button" data-testid="new-task" onClick={() => setCreating(!creating)}>
          New task
        </button>
        {board.loading ? <span class="quiet">Reading…</span> : null}
      </div>
      {creating ? <NewTaskForm repositories={catalog.value?.repositories ?? []} boardId={boardId || null} /> : null}
      <MaybeError error={catalog.error} />
      <MaybeError error={board.error} />
      {columns ? (
        <div class="columns">
          {COLUMNS.map((column) => (
            <BoardColumn key={column} column={column} tasks={columns[column]} />
          ))}
        </div>
      ) : null}
    </section>
  );
}

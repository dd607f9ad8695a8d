/** One column of the board, virtualized: a thousand cards cost the few that are on screen. */
import { useVirtualizer } from '@tanstack/react-virtual';
import { useRef } from 'preact/hooks';
import { attentionWords, COLUMN_TITLES, type BoardTask, type Column } from '../board-columns';
import { taskHref } from '../route';

const CARD_HEIGHT = 64;

export function BoardColumn({ column, tasks }: { column: Column; tasks: BoardTask[] }) {
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: tasks.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => CARD_HEIGHT,
    overscan: 8,
  });
  return (
    <div class="column" data-testid={`column-${column}`}>
      <h2>
        {COLUMN_TITLES[column]} <span class="count">{tasks.length}</span>
      </h2>
      <div class="column-scroll" ref={scroller}>
        <div class="column-inner" style={{ height: `${virtualizer.getTotalSize()}px` }}>
          {virtualizer.getVirtualItems().map((item) => {
            const task = tasks[item.index]!;
            const why = task.attention ? attentionWords(task.attention.reason) : null;
            return (
              <a
                key={task.id}
                class="task-card"
                href={taskHref(task.id)}
                data-testid="task-card"
                data-task-id={task.id}
                data-attention={task.attention?.reason}
                style={{ transform: `translateY(${item.start}px)`, height: `${CARD_HEIGHT - 6}px` }}
              >
                <span class="title">{task.title}</span>
                <small data-testid={why ? 'attention-reason' : undefined}>
                  {why ?? new Date(task.createdAt).toLocaleString()}
                </small>
              </a>
            );
          })}
        </div>
      </div>
    </div>
  );
}

/**
 * The board's tasks, kept live: the task list read once (and again on a `reset`, a comeback from a
 * lost connection, or new filters), then each change on the feed read as its one task and patched
 * in (board-live.ts). A task read while the list is being read again waits for the list, then is
 * read anew, so an older list never overwrites a newer task; one task is never read twice at once.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { allPages, ApiFailure } from './api';
import type { BoardTask } from './board-columns';
import { cardOf, listPath, patchTask, taskOfChange, type BoardFilter, type TaskRead } from './board-live';
import { onComeback, type FeedSignal } from './change-feed';
import { useSession } from './session-context';

export interface BoardTasks {
  tasks: readonly BoardTask[] | undefined;
  error: ApiFailure | null;
  loading: boolean;
}

/** Changes of one transaction arrive together: one read per task for them. */
const GATHER_MS = 20;

const failureOf = (err: unknown): ApiFailure =>
  err instanceof ApiFailure
    ? err
    : new ApiFailure(0, { code: 'console_error', message: String(err), action: 'report' });

export function useBoardTasks(filter: BoardFilter): BoardTasks {
  const { api, feed } = useSession();
  const [tasks, setTasks] = useState<readonly BoardTask[] | undefined>(undefined);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  const filterRef = useRef(filter);
  filterRef.current = filter;
  /** While the list is read: the tasks that changed meanwhile, read once it has come. */
  const listing = useRef<Set<string> | null>(null);
  const reading = useRef(new Set<string>());
  const again = useRef(new Set<string>());

  const failed = useCallback(
    (err: unknown) => {
      const failure = failureOf(err);
      // A lost connection: the comeback reads the whole list again.
      if (failure.status === 0) feed.reportLost();
      setError(failure);
    },
    [feed],
  );

  const readTask = useCallback(
    (taskId: string) => {
      if (listing.current) return void listing.current.add(taskId);
      if (reading.current.has(taskId)) return void again.current.add(taskId);
      reading.current.add(taskId);
      api
        .get<Extract<TaskRead, { found: true }>['task']>(`/v1/tasks/${encodeURIComponent(taskId)}`)
        .then(
          (task): TaskRead => ({ found: true, task }),
          (err: unknown): TaskRead => {
            if (err instanceof ApiFailure && err.status === 404) return { found: false };
            throw err;
          },
        )
        .then((read) => {
          feed.reportAlive();
          if (listing.current) return void listing.current.add(taskId);
          setTasks((list) => (list ? patchTask(list, taskId, read, filterRef.current) : list));
        }, failed)
        .finally(() => {
          reading.current.delete(taskId);
          if (again.current.delete(taskId)) readTask(taskId);
        });
    },
    [api, feed, failed],
  );

  useEffect(() => {
    let cancelled = false;
    const changed = new Set<string>();
    listing.current = changed;
    setLoading(true);
    allPages<BoardTask>(api, listPath(filter)).then(
      (items) => {
        if (cancelled) return;
        listing.current = null;
        setTasks(items.map(cardOf));
        setError(null);
        setLoading(false);
        feed.reportAlive();
        for (const taskId of changed) readTask(taskId);
      },
      (err: unknown) => {
        if (cancelled) return;
        listing.current = null;
        failed(err);
        setLoading(false);
      },
    );
    return () => {
      cancelled = true;
    };
  }, [api, feed, filter.boardId, filter.repositoryId, generation, readTask, failed]);

  useEffect(() => {
    const gathered = new Set<string>();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const unsubscribe = feed.subscribe((signal: FeedSignal) => {
      if (signal.type === 'reset') return reload();
      const taskId = taskOfChange(signal.change);
      if (!taskId) return;
      gathered.add(taskId);
      timer ??= setTimeout(() => {
        timer = null;
        const ids = [...gathered];
        gathered.clear();
        for (const id of ids) readTask(id);
      }, GATHER_MS);
    });
    // Back from a lost connection: the list is read again.
    const unwatch = onComeback(feed, reload);
    return () => {
      unsubscribe();
      unwatch();
      if (timer) clearTimeout(timer);
    };
  }, [feed, reload, readTask]);

  return { tasks, error, loading };
}

/**
 * A page's read of the API: loading, its value, or the failure to show; read again when the feed
 * says something it shows changed (or reset), and after a lost connection comes back. A read never
 * hangs the page: its failure is the value shown.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api';
import { onComeback, type FeedSignal } from './change-feed';
import { useSession } from './session-context';
import type { ChangeEvent } from './sse-parser';

export interface Resource<T> {
  value: T | undefined;
  error: ApiFailure | null;
  loading: boolean;
  reload: () => void;
}

export function useResource<T>(
  load: (signal: { cancelled: boolean }) => Promise<T>,
  deps: unknown[],
  concerns: (change: ChangeEvent) => boolean = () => true,
): Resource<T> {
  const { feed } = useSession();
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const concernsRef = useRef(concerns);
  concernsRef.current = concerns;
  const reload = useCallback(() => setGeneration((g) => g + 1), []);

  useEffect(() => {
    const signal = { cancelled: false };
    setLoading(true);
    load(signal).then(
      (next) => {
        if (signal.cancelled) return;
        setValue(next);
        setError(null);
        setLoading(false);
        feed.reportAlive();
      },
      (err: unknown) => {
        if (signal.cancelled) return;
        const failure =
          err instanceof ApiFailure
            ? err
            : new ApiFailure(0, { code: 'console_error', message: String(err), action: 'report' });
        if (failure.status === 0) feed.reportLost();
        setError(failure);
        setLoading(false);
      },
    );
    return () => {
      signal.cancelled = true;
    };
  }, [...deps, generation]);

  useEffect(() => {
    // Changes come in bursts (a launch touches a session, an execution, a task): one read for a burst.
    let pending: ReturnType<typeof setTimeout> | null = null;
    const unsubscribe = feed.subscribe((signal: FeedSignal) => {
      if (signal.type === 'change' && !concernsRef.current(signal.change)) return;
      if (pending) return;
      pending = setTimeout(() => {
        pending = null;
        reload();
      }, 250);
    });
    // Back from a lost connection: what failed meanwhile is read again.
    const unwatch = onComeback(feed, reload);
    return () => {
      unsubscribe();
      unwatch();
      if (pending) clearTimeout(pending);
    };
  }, [feed, reload]);

  return { value, error, loading, reload };
}

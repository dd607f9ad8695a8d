/**
 * A session's log, live: GET /v1/sessions/:id/logs?follow=1 read with fetch and a stream reader
 * while the agent runs (the whole log once it has ended), the last LOG_CAP characters kept
 * (log-buffer.ts) and only the lines on screen in the DOM (a virtualized list): hours of output
 * keep the page as light as a minute of it.
 */
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from '../api';
import { appendLog, emptyLog, type LogBuffer } from '../log-buffer';
import { useSession } from '../session-context';
import { MaybeError } from './error-view';

const LOG_CAP = 512 * 1024;
const LINE_HEIGHT = 16;
const LOG_BOX_MAX = 320;
// A scroll within this long after the reader's own input is theirs (a wheel's scrolls come after it).
const READER_SCROLL_MS = 1000;

export function SessionLog({ sessionId, live }: { sessionId: string; live: boolean }) {
  const { api } = useSession();
  const [log, setLog] = useState<LogBuffer>(emptyLog);
  const [error, setError] = useState<ApiFailure | null>(null);
  const scroller = useRef<HTMLPreElement>(null);
  const follow = useRef(true);
  // When the reader last touched the box (wheel, touch, key, pointer): only their own scrolls
  // decide whether the box follows. A scroll the list made itself, seen after more lines grew the
  // box past it, would otherwise read as "scrolled up" and stop following a fast log for good.
  const touched = useRef(Number.NEGATIVE_INFINITY);
  const byReader = () => {
    touched.current = performance.now();
  };

  useEffect(() => {
    const abort = new AbortController();
    setLog(emptyLog());
    setError(null);
    (async () => {
      const response = await api.stream(`/v1/sessions/${sessionId}/logs${live ? '?follow=1' : ''}`, {}, abort.signal);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        setLog((now) => appendLog(now, value, LOG_CAP));
      }
    })().catch((err: unknown) => {
      if (abort.signal.aborted) return;
      setError(
        err instanceof ApiFailure
          ? err
          : new ApiFailure(0, { code: 'connection_lost', message: 'The log stream broke.', action: 'retry' }),
      );
    });
    return () => abort.abort();
  }, [api, sessionId, live]);

  const virtualizer = useVirtualizer({
    count: log.lines.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => LINE_HEIGHT,
    overscan: 20,
  });

  // Kept at the end while the reader is there; left alone once they scroll up.
  useEffect(() => {
    if (follow.current && log.lines.length > 0) virtualizer.scrollToIndex(log.lines.length - 1, { align: 'end' });
  }, [log, virtualizer]);

  return (
    <>
      {log.dropped > 0 ? (
        <p class="quiet">
          The first {log.dropped.toLocaleString()} characters are left out here: the page keeps the last{' '}
          {LOG_CAP / 1024} KiB.
        </p>
      ) : null}
      <pre
        class="log"
        data-testid="session-log"
        ref={scroller}
        // As tall as its lines, up to a screenful: a short log takes a short box.
        style={{ height: `${Math.min(LOG_BOX_MAX, Math.max(LINE_HEIGHT * 2, virtualizer.getTotalSize()) + 8)}px` }}
        onWheel={byReader}
        onTouchStart={byReader}
        onKeyDown={byReader}
        onPointerDown={byReader}
        onScroll={(e) => {
          if (performance.now() - touched.current > READER_SCROLL_MS) return;
          const el = e.currentTarget;
          follow.current = el.scrollTop + el.clientHeight >= el.scrollHeight - LINE_HEIGHT * 2;
        }}
      >
        <div class="column-inner" style={{ height: `${virtualizer.getTotalSize()}px` }}>
          {virtualizer.getVirtualItems().map((item) => (
            <div key={item.index} class="log-line" style={{ transform: `translateY(${item.start}px)` }}>
              {/* Each line ends in its newline, so the log's text reads (and copies) as printed. */}
              {`${log.lines[item.index]}\n`}
            </div>
          ))}
        </div>
      </pre>
      <MaybeError error={error} />
    </>
  );
}

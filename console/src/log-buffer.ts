/**
 * What the page keeps of a session's log: the last `capChars` characters, cut at a line start
 * where one is near, so a log that grows for hours keeps the page's memory flat. Pure.
 */
export interface LogBuffer {
  /** The lines kept, the last one possibly unfinished. */
  lines: string[];
  /** Characters kept (the lines joined with their newlines). */
  size: number;
  /** Characters dropped from the front so far. */
  dropped: number;
}

export const emptyLog = (): LogBuffer => ({ lines: [], size: 0, dropped: 0 });

/** The buffer with `chunk` appended and its front cut to at most `capChars`. Returns a new buffer. */
export function appendLog(buffer: LogBuffer, chunk: string, capChars: number): LogBuffer {
  if (chunk === '') return buffer;
  const lines = buffer.lines.slice();
  const parts = chunk.split('\n');
  if (lines.length === 0) lines.push(parts[0]!);
  else lines[lines.length - 1] += parts[0]!;
  for (const part of parts.slice(1)) lines.push(part);
  let size = buffer.size + chunk.length;
  let dropped = buffer.dropped;
  // Whole lines first: each costs its text and its newline.
  let start = 0;
  while (size > capChars && start < lines.length - 1) {
    const cost = lines[start]!.length + 1;
    size -= cost;
    dropped += cost;
    start += 1;
  }
  const kept = lines.slice(start);
  // One line alone longer than the cap keeps its end.
  if (size > capChars) {
    const only = kept[0]!;
    const cut = size - capChars;
    kept[0] = only.slice(cut);
    size -= cut;
    dropped += cut;
  }
  return { lines: kept, size, dropped };
}

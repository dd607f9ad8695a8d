/** An agent's log as every reader sees it: where it is read from, and its last lines. */

/** Where a log is read from: its file on this machine, or its host through that host's queue. */
export interface LogSource {
  /** The whole kept log, or its last `lines` lines, and the offset a follow continues from. */
  tail(lines: number | null): Promise<{ text: Buffer; offset: number }>;
  /** What was written since `offset` (a rotated log is read to its end under its new name first), and the new offset. */
  since(offset: number): Promise<{ chunk: Buffer; offset: number }>;
}

/** A read of an agent's log on its host: the last lines, or what came since an offset. */
export interface LogRead {
  logPath: string;
  /** The log is on this SSH target (its agent ran there): read over SSH. */
  sshTargetId?: string | null;
  /** Absent: the tail (`lines`, null for all). Present: what came since this offset. */
  since?: number;
  lines?: number | null;
}

/** The last `lines` lines of a text (all of it for null). */
export function lastLines(text: string, lines: number | null): string {
  if (lines === null) return text;
  if (lines === 0) return '';
  const parts = text.split('\n');
  const trailing = parts[parts.length - 1] === '' ? parts.pop() : undefined;
  return parts.slice(-lines).join('\n') + (trailing === undefined ? '' : '\n');
}

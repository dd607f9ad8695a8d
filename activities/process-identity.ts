/**
 * A process is identified by pid AND its start time (clock ticks since boot, field 22 of
 * /proc/<pid>/stat), never by pid alone: a reused pid has another start time.
 */
import { readFile } from 'node:fs/promises';

export async function processStartTime(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return null; // exited, not yet reaped
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

export async function isSameProcess(pid: number, startTime: string): Promise<boolean> {
  return (await processStartTime(pid)) === startTime;
}

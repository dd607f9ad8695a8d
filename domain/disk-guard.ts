/**
 * The host's free-space guard [R6.11]: when the filesystem of the workspace root is about to fall
 * under the minimum it keeps (TWS_MIN_FREE_DISK), the agents of the host are stopped before it
 * does. Pure: the reading is executors/host/disk.ts, the stopping worker/disk-guard.ts.
 *
 * A check sees the free space only every `TWS_DISK_GUARD_EVERY_MS`; an agent writes meanwhile, and
 * while it is being stopped. So the guard stops agents while the free space is still above the
 * minimum by a margin: the larger of the operator's floor (TWS_DISK_GUARD_MARGIN: what a writer
 * that starts at full speed can write before it is seen twice) and four times the largest fall
 * seen between two checks lately (the fall of the next check, and three more for the stop itself).
 */
import { minFreeBytes, parseByteSize, type FilesystemSpace, type MinFreeDisk } from './disk';

/** How far back a fall between two checks still sizes the margin. */
export const FALL_WINDOW_MS = 60_000;

/** Falls counted in the margin: the next check's and the time a stop takes. */
const FALLS_IN_MARGIN = 4;

/** `TWS_DISK_GUARD_MARGIN`: bytes (`1GiB`, `512MiB`); unset: 1 GiB (2 GB/s for half a second). */
export function parseGuardMargin(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 1024 ** 3;
  try {
    return parseByteSize(raw);
  } catch {
    throw new Error('TWS_DISK_GUARD_MARGIN must be bytes (for example 1GiB or 536870912)');
  }
}

/** `TWS_DISK_GUARD_EVERY_MS`: a statfs is cheap (microseconds), so often; at least 10 ms. */
export function parseGuardEvery(raw: string | undefined): number {
  const ms = raw === undefined || raw.trim() === '' ? 250 : Number(raw);
  if (!Number.isFinite(ms) || ms < 10)
    throw new Error('TWS_DISK_GUARD_EVERY_MS must be a number of milliseconds, at least 10');
  return ms;
}

/** One check: when, and the free bytes it read. */
export interface FreeSpaceReading {
  at: number;
  freeBytes: number;
}

/** The margin over the minimum, from the readings of the last minute (oldest first). */
export function guardMargin(floorBytes: number, readings: FreeSpaceReading[]): number {
  let largestFall = 0;
  for (let i = 1; i < readings.length; i++)
    largestFall = Math.max(largestFall, readings[i - 1]!.freeBytes - readings[i]!.freeBytes);
  return Math.max(floorBytes, FALLS_IN_MARGIN * largestFall);
}

/**
 * Whether the host's agents are to be stopped now: the free space under the minimum plus the
 * margin, or not readable at all (fail-closed: a filesystem the guard cannot read is never "fine").
 */
export function hostDiskRunningOut(space: FilesystemSpace | null, setting: MinFreeDisk, marginBytes: number): boolean {
  if (space === null) return true;
  return space.freeBytes < minFreeBytes(setting, space.totalBytes) + marginBytes;
}

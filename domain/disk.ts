/**
 * Disk rules [R6.11]: how much free space a host keeps before it creates a workspace
 * (`TWS_MIN_FREE_DISK`), and which failures mean the disk filled up. Pure: the measuring is the
 * executors' (executors/host/disk.ts) and the worker's (worker/disk-measurement.ts).
 */

const GIB = 1024 ** 3;

/** The minimum free space: a number of bytes, a share of the filesystem, or the default (the larger of 2 GiB and 5 %). */
export type MinFreeDisk = { kind: 'bytes'; bytes: number } | { kind: 'percent'; percent: number } | { kind: 'default' };

const UNITS: Record<string, number> = {
  '': 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: GIB,
  gb: 1000 ** 3,
  gib: GIB,
  t: 1024 ** 4,
  tb: 1000 ** 4,
  tib: 1024 ** 4,
};

/** `TWS_MIN_FREE_DISK`: bytes (`2147483648`, `2GiB`, `500MB`), a percentage (`5%`), `0` (no minimum), or unset (the default). */
export function parseMinFreeDisk(raw: string | undefined): MinFreeDisk {
  const text = (raw ?? '').trim().toLowerCase();
  if (text === '') return { kind: 'default' };
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(text);
  if (percent) {
    const value = Number(percent[1]);
    if (value > 100) throw new Error('TWS_MIN_FREE_DISK as a percentage must be at most 100%');
    return { kind: 'percent', percent: value };
  }
  try {
    return { kind: 'bytes', bytes: parseByteSize(text) };
  } catch {
    throw new Error(
      'TWS_MIN_FREE_DISK must be bytes (for example 2147483648 or 2GiB) or a percentage (for example 5%)',
    );
  }
}

/** A size in bytes: `2147483648`, `2GiB`, `2g`, `500MB` (k, m, g, t: powers of 1024; kb, mb, gb, tb: of 1000). */
export function parseByteSize(raw: string): number {
  const bytes = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/.exec(raw.trim().toLowerCase());
  const unit = bytes ? UNITS[bytes[2]!] : undefined;
  if (!bytes || unit === undefined) throw new Error(`not a size in bytes: ${raw}`);
  return Math.round(Number(bytes[1]) * unit);
}

/** A task's quota where neither the task nor the operator sets one: a task's writes are bounded by default. */
const DEFAULT_TASK_DISK_QUOTA = 20 * GIB;

/** `TWS_TASK_DISK_QUOTA`: bytes (`20GiB`); unset: DEFAULT_TASK_DISK_QUOTA; `0`: no quota (the operator's explicit choice). */
export function parseDiskQuota(raw: string | undefined): number | null {
  if (raw === undefined || raw.trim() === '') return DEFAULT_TASK_DISK_QUOTA;
  if (raw.trim() === '0') return null;
  try {
    return parseByteSize(raw);
  } catch {
    throw new Error('TWS_TASK_DISK_QUOTA must be bytes (for example 20GiB), or 0 for no quota');
  }
}

/** Whether a workspace measured at `bytes` is over its task's quota (its own, else the default; none: never). */
export const overDiskQuota = (bytes: number, taskQuota: number | null, defaultQuota: number | null): boolean => {
  const quota = taskQuota ?? defaultQuota;
  return quota !== null && bytes > quota;
};

/**
 * Whether a workspace is still surely within its quota without walking it again: it measured
 * `bytes` when its filesystem had `freeBefore` free, and it cannot have grown by more than that
 * filesystem's free space fell since. Only where everything it counts is on that filesystem.
 */
export const surelyWithinQuota = (last: { bytes: number; freeBefore: number }, freeNow: number, quota: number) =>
  last.bytes + Math.max(0, last.freeBefore - freeNow) <= quota;

/** The free bytes a filesystem of `totalBytes` must keep under the setting. */
export function minFreeBytes(setting: MinFreeDisk, totalBytes: number): number {
  switch (setting.kind) {
    case 'bytes':
      return setting.bytes;
    case 'percent':
      return Math.ceil((totalBytes * setting.percent) / 100);
    case 'default':
      return Math.max(2 * GIB, Math.ceil(totalBytes * 0.05));
  }
}

/** What the filesystem of a workspace root holds, as statfs reads it. */
export interface FilesystemSpace {
  freeBytes: number;
  totalBytes: number;
}

/** Whether the free space is under the minimum: a materialization is then refused `host_disk_low` before anything is made. */
export const diskIsLow = (space: FilesystemSpace, setting: MinFreeDisk): boolean =>
  space.freeBytes < minFreeBytes(setting, space.totalBytes);

/** errno codes of a write that found no room: the disk, or the user's quota, is full. */
const NO_SPACE_CODES = new Set(['ENOSPC', 'EDQUOT']);

/**
 * What git and coreutils print when a write found no room. git's checkout says only "unable to
 * write file" (a file it could create but not fill: a full disk; one it cannot create says
 * "unable to create file"), its object writes name the errno.
 */
const NO_SPACE_TEXT = /no space left on device|disk quota exceeded|unable to write file|ENOSPC|EDQUOT/i;

/** Whether a failure (anywhere in its cause chain) is a write that ran out of space. */
export function isNoSpaceFailure(err: unknown): boolean {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 10; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && NO_SPACE_CODES.has(code)) return true;
    if (NO_SPACE_TEXT.test(cur.message)) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}

/** The figure `du -sk` printed first (KiB), as bytes; null when it printed none. */
export function duBytes(stdout: string): number | null {
  const kib = /^(\d+)\s/.exec(stdout);
  return kib ? Number(kib[1]) * 1024 : null;
}

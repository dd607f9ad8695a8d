/**
 * Disk on this host [R6.11]: the bytes a workspace folder holds (what `du` counts: every file,
 * tracked, untracked or ignored, such as node_modules; links are not followed and other
 * filesystems mounted inside are not crossed) and the free and total bytes of the filesystem a
 * folder is on. Nothing here runs anything an agent wrote.
 */
import { execFile } from 'node:child_process';
import { statfs } from 'node:fs/promises';
import path from 'node:path';
import { duBytes, type FilesystemSpace } from '../../domain/disk';

/** One workspace's walk at most: a folder of millions of files still ends, measured next time. */
const DU_TIMEOUT_MS = 10 * 60_000;

/**
 * The bytes under `dir` on disk, or null when it cannot be measured (gone, unreadable). `du` may
 * exit non-zero for a file it could not read while still printing the total of the rest: that
 * total is the measure.
 */
export function directoryBytes(dir: string): Promise<number | null> {
  return new Promise((resolve) => {
    execFile(
      'du',
      ['-s', '-k', '-x', '--', dir],
      { timeout: DU_TIMEOUT_MS, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' }, maxBuffer: 1 << 20 },
      (_err, stdout) => resolve(duBytes(String(stdout))),
    );
  });
}

/** The filesystem that holds `folder` (or would: the nearest folder above it that exists). */
export async function filesystemSpace(folder: string): Promise<FilesystemSpace> {
  for (let dir = path.resolve(folder); ; dir = path.dirname(dir)) {
    try {
      const fs = await statfs(dir);
      // bavail: what a process that is not root may still write, as `df` shows it.
      return { freeBytes: fs.bavail * fs.bsize, totalBytes: fs.blocks * fs.bsize };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || path.dirname(dir) === dir) throw err;
    }
  }
}

/**
 * Disk on this host [R6.11]: the bytes a workspace folder holds (what `du` counts: every file,
 * tracked, untracked or ignored, such as node_modules; links are not followed and other
 * filesystems mounted inside are not crossed) and the free and total bytes of the filesystem a
 * folder is on. Nothing here runs anything an agent wrote.
 */
import { statfs } from 'node:fs/promises';
import path from 'node:path';
import { duBytes, type FilesystemSpace } from '../../domain/disk';
import { processStarter } from '../../git/process-starter';

/** One workspace's walk at most: a folder of millions of files still ends, measured next time. */
const DU_TIMEOUT_MS = 10 * 60_000;

/**
 * The bytes under `dir` on disk, or null when it cannot be measured (gone, unreadable). `du` may
 * exit non-zero for a file it could not read while still printing the total of the rest: that
 * total is the measure. It runs at the lowest CPU priority (`nice -n 19`), so that launches on
 * the same host are served first, and through the process starter (git/process-starter.ts), so
 * that no walk costs a fork of the worker (a thousand workspaces measured must not move
 * launch latency; bench/scenarios/disk-measurement.ts measures it).
 */
export function directoryBytes(dir: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = processStarter().spawn('nice', ['-n', '19', 'du', '-s', '-k', '-x', '--', dir], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
    });
    let out = '';
    let settled = false;
    const settle = (bytes: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(bytes);
    };
    const timer = setTimeout(() => child.kill('SIGKILL'), DU_TIMEOUT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      if (out.length < 1 << 20) out += chunk.toString('utf8');
    });
    child.stderr!.resume();
    child.once('error', () => settle(null));
    child.once('close', () => settle(duBytes(out)));
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

/** Small filesystem facts the workspace activities share. */
import { lstat, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { OWNERSHIP_MARKER_FILE, type OwnershipMarker } from '../domain/task-layout';

export async function isRealDirectory(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isDirectory();
  } catch {
    return false;
  }
}

export async function pathExists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

export async function sameRealPath(a: string, b: string): Promise<boolean> {
  const [ra, rb] = await Promise.all([realpath(a).catch(() => path.resolve(a)), realpath(b).catch(() => path.resolve(b))]);
  return ra === rb;
}

export async function readMarker(taskFolder: string): Promise<OwnershipMarker | null> {
  try {
    const parsed = JSON.parse(await readFile(path.join(taskFolder, OWNERSHIP_MARKER_FILE), 'utf8')) as OwnershipMarker;
    return parsed.kind === 'task-workspaces/ownership' ? parsed : null;
  } catch {
    return null;
  }
}

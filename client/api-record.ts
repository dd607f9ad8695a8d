/**
 * The data folder's api.json: where its `make start` listens. The launcher writes it once its API
 * answers and marks it stopped on stop; `tws` reads it to find the instance (client/cli/cli-instance.ts).
 * Both sides of one file, so it lives beside both rather than in either.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const apiRecordFile = (dataDir: string) => path.join(dataDir, 'api.json');

interface ApiRecord {
  url: string;
  pid: number;
  /** Set when its `make start` stopped: the URL is where it listened. */
  stopped?: boolean;
}

/** Written whole (0600) and renamed into place, so a reader never sees half a record. */
export async function writeApiRecord(dataDir: string, url: string): Promise<void> {
  const file = apiRecordFile(dataDir);
  const record: ApiRecord = { url, pid: process.pid };
  await writeFile(`${file}.tmp`, JSON.stringify(record) + '\n', { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

/** At a stop: the record stays, marked stopped (`tws` then says which instance is not running). */
export async function markApiRecordStopped(dataDir: string): Promise<void> {
  const file = apiRecordFile(dataDir);
  const record = JSON.parse(await readFile(file, 'utf8')) as ApiRecord;
  await writeFile(`${file}.tmp`, JSON.stringify({ ...record, stopped: true }) + '\n', { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * The URL the data folder's instance listens on, or last listened on: a stopped `make start`
 * leaves its record (marked stopped), so that `tws` names that instance's port, not the default
 * one. `running` is false once stopped, or when the launcher that wrote it is gone (killed outright).
 */
export function recordedApi(dataDir: string): { url: string; running: boolean } | null {
  const file = apiRecordFile(dataDir);
  if (!existsSync(file)) return null;
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as Partial<ApiRecord>;
    if (typeof record.url !== 'string' || !Number.isInteger(record.pid)) return null;
    return { url: record.url, running: record.stopped !== true && alive(record.pid!) };
  } catch {
    return null;
  }
}

/**
 * Where the worker and the gateway write under `make start` (client/launcher/launcher.ts): their JSON logs
 * (stdout) and the Temporal SDK's warnings and any fatal line (stderr) go to one file in the data
 * folder, `services.log`, so the terminal keeps the launcher's own lines and the banner. Each start
 * begins the file anew and keeps the previous start's as `services.log.1`. A part that dies before
 * the system is up is the exception: its last plain lines are said with the start-up failure, so
 * its reason is on the terminal and not only in the file.
 */
import { openSync } from 'node:fs';
import { readFile, rename } from 'node:fs/promises';
import path from 'node:path';

export interface ServiceLog {
  file: string;
  /** A descriptor opened for appending, handed to each service as its stdout and stderr. */
  fd: number;
}

export async function openServiceLog(dataDir: string): Promise<ServiceLog> {
  const file = path.join(dataDir, 'services.log');
  await rename(file, `${file}.1`).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  return { file, fd: openSync(file, 'a', 0o600) };
}

/**
 * A start-up failure's one line, with what the services said last when they said anything: the
 * last line of their log that is not JSON (a service's own stderr: a refusal, an uncaught error),
 * nor indented or closing (a stack frame, an object's fields), nor Node's version after an uncaught error.
 */
export async function failureLine(reason: string, log: ServiceLog | null): Promise<string> {
  const text = log ? await readFile(log.file, 'utf8').catch(() => '') : '';
  const said = text
    .split('\n')
    .filter((line) => /^[^\s{}]/.test(line) && !/^Node\.js v\d/.test(line))
    .pop();
  return `start-up failed: ${reason}${said ? ` (the services' log ${log!.file} ends: ${said.trim()})` : ''}`;
}

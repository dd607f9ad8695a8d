/**
 * Which instance `tws` talks to, and with which token. The instance is the `.data/` folder of the
 * checkout this CLI file belongs to (from its own location, never the current folder), or the one
 * `--data-dir` / `TWS_DATA_DIR` names. `make start` records there, in api.json, the URL its API
 * listens on once it answers, and removes it on stop. The data folder's operator token
 * (secrets.json) goes only to that instance's own URL: an API named by `--api` / `TWS_API_URL`
 * that is elsewhere gets `TWS_OPERATOR_TOKEN` or nothing.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, localApiUrl } from '../domain/config';
import { CliError, EXIT, type Target } from './cli-io';

/** The checkout: the parent of client/ (run through tsx) or of .build/client/ (the built CLI). */
function checkoutRoot(dir: string = __dirname): string {
  const up = path.resolve(dir, '..');
  return path.basename(up) === '.build' ? path.dirname(up) : up;
}

const apiRecordFile = (dataDir: string) => path.join(dataDir, 'api.json');

interface ApiRecord {
  url: string;
  pid: number;
}

/** Written whole (0600) and renamed into place, so a reader never sees half a record. */
export async function writeApiRecord(dataDir: string, url: string): Promise<void> {
  const file = apiRecordFile(dataDir);
  const record: ApiRecord = { url, pid: process.pid };
  await writeFile(`${file}.tmp`, JSON.stringify(record) + '\n', { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

export const removeApiRecord = (dataDir: string): Promise<void> => rm(apiRecordFile(dataDir), { force: true });

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The recorded URL while the launcher that wrote it lives (one killed outright leaves it behind). */
function recordedUrl(dataDir: string): string | null {
  const file = apiRecordFile(dataDir);
  if (!existsSync(file)) return null;
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as Partial<ApiRecord>;
    if (typeof record.url !== 'string' || !Number.isInteger(record.pid)) return null;
    return alive(record.pid!) ? record.url : null;
  } catch {
    return null;
  }
}

/** One spelling per URL, so `http://127.0.0.1:8080/` and `http://127.0.0.1:8080` are the same API. */
function normalUrl(url: string, from: string): string {
  try {
    return new URL(url).href.replace(/\/+$/, '');
  } catch {
    throw new CliError(`${from} is not a URL: ${url}`, EXIT.usage);
  }
}

export interface Overrides {
  dataDir?: string;
  api?: string;
}

export function target(env: NodeJS.ProcessEnv, overrides: Overrides = {}): Target {
  const config = loadConfig(
    { ...env, ...(overrides.dataDir ? { TWS_DATA_DIR: path.resolve(overrides.dataDir) } : {}) },
    { cwd: checkoutRoot(), hostname: os.hostname(), cpus: os.availableParallelism() },
  );
  const own = normalUrl(
    recordedUrl(config.dataDir) ?? localApiUrl(config.apiHost, config.apiPort),
    `${apiRecordFile(config.dataDir)}'s url`,
  );
  const named = overrides.api ? ['--api', overrides.api] : env.TWS_API_URL ? ['TWS_API_URL', env.TWS_API_URL] : null;
  const url = named ? normalUrl(named[1]!, named[0]!) : own;
  if (env.TWS_OPERATOR_TOKEN) return { url, token: env.TWS_OPERATOR_TOKEN };
  if (url !== own)
    throw new CliError(
      `${url} is not the API of ${config.dataDir} (that is ${own}): set TWS_OPERATOR_TOKEN to its operator token`,
      EXIT.usage,
    );
  const secretsFile = path.join(config.dataDir, 'secrets.json');
  const found = existsSync(secretsFile);
  const token = found
    ? (JSON.parse(readFileSync(secretsFile, 'utf8')) as { operatorToken?: string }).operatorToken
    : undefined;
  if (!token)
    throw new CliError(
      `no operator token: set TWS_OPERATOR_TOKEN, or point --data-dir at the .data/ of a make start (${secretsFile} ${found ? 'has none' : 'is missing'})`,
      EXIT.usage,
    );
  return { url, token };
}

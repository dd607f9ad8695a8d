/**
 * Which instance `tws` talks to, and with which token. The instance is the `.data/` folder of the
 * checkout this CLI file belongs to (from its own location, never the current folder), or the one
 * `--data-dir` / `TWS_DATA_DIR` names. `make start` records there, in api.json, the URL its API
 * listens on once it answers, and marks it stopped on stop. Each command is sent with the token
 * of the role its route needs: a user's command with the user token, an operator's with the
 * operator token. `TWS_USER_TOKEN` / `TWS_OPERATOR_TOKEN`, when either is set, are the only tokens
 * sent (a command of the other role gets the one set; the service then says whether it may). Else
 * the data folder's tokens (secrets.json), which go only to that instance's own URL: an API named
 * by `--api` / `TWS_API_URL` that is elsewhere gets the variables' tokens or nothing.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, localApiUrl } from '../../domain/config';
import { apiRecordFile, recordedApi } from '../api-record';
import { CliError, EXIT, type Target } from './cli-io';

/** The checkout: the parent of client/ (run through tsx) or of .build/client/ (the built CLI); this file is in client/cli/. */
function checkoutRoot(dir: string = __dirname): string {
  const up = path.resolve(dir, '../..');
  return path.basename(up) === '.build' ? path.dirname(up) : up;
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

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The same API: the same URL, or the same port of this machine's loopback however it is spelled. */
function sameApi(a: string, b: string): boolean {
  if (a === b) return true;
  const [x, y] = [new URL(a), new URL(b)];
  return (
    x.protocol === y.protocol &&
    x.port === y.port &&
    x.pathname === y.pathname &&
    LOOPBACK.has(x.hostname) &&
    LOOPBACK.has(y.hostname)
  );
}

/** Which token a command needs: the role of its route (client/gateway/auth.ts). */
export type Role = 'user' | 'operator';

export function target(env: NodeJS.ProcessEnv, overrides: Overrides = {}, role: Role = 'operator'): Target {
  const config = loadConfig(
    { ...env, ...(overrides.dataDir ? { TWS_DATA_DIR: path.resolve(overrides.dataDir) } : {}) },
    { cwd: checkoutRoot(), hostname: os.hostname(), cpus: os.availableParallelism() },
  );
  const recorded = recordedApi(config.dataDir);
  // A running instance's record; a stopped one's unless a port is configured (a start elsewhere since).
  const fromRecord = recorded && (recorded.running || !env.TWS_API_PORT) ? recorded : null;
  const own = normalUrl(
    fromRecord?.url ?? localApiUrl(config.apiHost, config.apiPort),
    `${apiRecordFile(config.dataDir)}'s url`,
  );
  const down = fromRecord && !fromRecord.running ? `the instance of ${config.dataDir} is not running` : undefined;
  const named = overrides.api ? ['--api', overrides.api] : env.TWS_API_URL ? ['TWS_API_URL', env.TWS_API_URL] : null;
  const asked = named ? normalUrl(named[1]!, named[0]!) : own;
  const fromEnv =
    role === 'user' ? (env.TWS_USER_TOKEN ?? env.TWS_OPERATOR_TOKEN) : (env.TWS_OPERATOR_TOKEN ?? env.TWS_USER_TOKEN);
  if (fromEnv) return { url: asked, token: fromEnv };
  const variable = role === 'user' ? 'TWS_USER_TOKEN' : 'TWS_OPERATOR_TOKEN';
  if (!sameApi(asked, own))
    throw new CliError(
      `${asked} is not the API of ${config.dataDir} (that is ${own}): set ${variable} to its ${role} token`,
      EXIT.usage,
    );
  // The data folder's token goes to exactly the address its instance recorded.
  const url = own;
  const secretsFile = path.join(config.dataDir, 'secrets.json');
  const found = existsSync(secretsFile);
  const secrets = found
    ? (JSON.parse(readFileSync(secretsFile, 'utf8')) as { userToken?: string; operatorToken?: string })
    : {};
  // The operator token may do what a user may: a data folder that holds only that one lends it to both.
  const token = role === 'user' ? (secrets.userToken ?? secrets.operatorToken) : secrets.operatorToken;
  if (!token)
    throw new CliError(
      `no ${role} token: set ${variable}, or point --data-dir at the .data/ of a make start (${secretsFile} ${found ? 'has none' : 'is missing'})`,
      EXIT.usage,
    );
  return { url, token, down };
}

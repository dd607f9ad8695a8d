import { accessSync, constants } from 'node:fs';
import path from 'node:path';

const executable = (p: string): boolean => {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const candidate = path.join(dir, name);
    if (dir && executable(candidate)) return candidate;
  }
  return null;
}

/** Where the Temporal CLI is found, in order: TEMPORAL_CLI, .tools/bin/temporal, temporal on PATH. */
export function resolveTemporalCli(projectRoot: string): string {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv && executable(fromEnv)) return fromEnv;
  const local = path.join(projectRoot, '.tools/bin/temporal');
  if (executable(local)) return local;
  const found = onPath('temporal');
  if (found) return found;
  throw new Error(
    'The Temporal CLI was not found: run `make start` or `bash scripts/setup.sh` to install it into .tools/',
  );
}

export function resolveTimeSkippingServer(projectRoot: string): string {
  const local = path.join(projectRoot, '.tools/bin/temporal-test-server');
  if (executable(local)) return local;
  const found = onPath('temporal-test-server');
  if (found) return found;
  throw new Error('The Temporal time-skipping test server was not found: run `bash scripts/setup.sh`');
}

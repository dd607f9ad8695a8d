import { mkdir, realpath } from 'node:fs/promises';
import type { Config } from '../domain/config';

/** The workspace root and log folder exist and are absolute real paths, so every recorded path compares equal to git's. */
export async function prepareWorkspaceRoot(config: Config): Promise<Config> {
  await mkdir(config.workspaceRoot, { recursive: true });
  await mkdir(config.logDir, { recursive: true });
  return { ...config, workspaceRoot: await realpath(config.workspaceRoot), logDir: await realpath(config.logDir) };
}

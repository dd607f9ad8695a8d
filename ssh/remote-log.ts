/**
 * An agent's log on an SSH target, read there by offset (the runner appends to one file; it is
 * not rotated): the same LogSource a host log is, so tail and follow work alike.
 */
import path from 'node:path';
import { lastLines, type LogSource } from '../domain/agent-log';
import type { SshTarget } from './connection';
import { readRemoteLog } from './remote-agent';

/** The most a tail reads of a remote log at once. */
const TAIL_MAX_BYTES = 8 * 1024 * 1024;
const CHUNK_MAX_BYTES = 1024 * 1024;

/** Where the target's agents' logs and exit statuses are: outside every task folder, so an agent never sees them in its workspace. */
export const remoteRunsDir = (target: Pick<SshTarget, 'workspaceRoot'>): string =>
  path.posix.join(target.workspaceRoot, '.task-workspaces', 'runs');

/** Whether a path is one of the target's run logs (a path from a row is still checked: nothing else is read on anyone's word). */
export function isRemoteRunLog(target: SshTarget, logPath: string): boolean {
  const runs = remoteRunsDir(target) + '/';
  return path.posix.normalize(logPath) === logPath && logPath.startsWith(runs) && logPath.endsWith('.log');
}

export function remoteLog(target: SshTarget, logPath: string): LogSource {
  return {
    tail: async (lines) => {
      const all = await readRemoteLog(target, { logPath, offset: 0, maxBytes: TAIL_MAX_BYTES });
      return { text: Buffer.from(lastLines(all.toString('utf8'), lines)), offset: all.length };
    },
    since: async (offset) => {
      const chunk = await readRemoteLog(target, { logPath, offset, maxBytes: CHUNK_MAX_BYTES });
      return { chunk, offset: offset + chunk.length };
    },
  };
}

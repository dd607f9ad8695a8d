/**
 * An agent's log read on its host, for a gateway elsewhere: the last lines, or what came since an
 * offset. Only a log of this host's log folder is read (the path comes from the execution row,
 * but a host never reads a file outside its own logs on anyone's word). Bytes travel as base64,
 * so a chunk that ends inside a character arrives whole.
 */
import path from 'node:path';
import { localLog } from '../client/agent-log';
import type { ActivityDeps } from './deps';
import { typedFailure } from './failures';

export interface LogRead {
  logPath: string;
  /** Absent: the tail (`lines`, null for all). Present: what came since this offset. */
  since?: number;
  lines?: number | null;
}

export function agentLogReadActivities({ config }: ActivityDeps) {
  return {
    async readAgentLog(input: LogRead): Promise<{ base64: string; offset: number }> {
      const resolved = path.resolve(input.logPath);
      if (!resolved.startsWith(path.resolve(config.logDir) + path.sep) || !resolved.endsWith('.log')) throw typedFailure('not_found');
      const log = localLog(resolved);
      const read = input.since === undefined ? await log.tail(input.lines ?? null).then((t) => ({ chunk: t.text, offset: t.offset })) : await log.since(input.since);
      return { base64: read.chunk.toString('base64'), offset: read.offset };
    },
  };
}

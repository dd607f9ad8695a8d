/**
 * An agent's log read on its host, for a gateway elsewhere: the last lines, or what came since an
 * offset. Only a log of this host's log folder is read (the path comes from the execution row,
 * but a host never reads a file outside its own logs on anyone's word). Bytes travel as base64,
 * so a chunk that ends inside a character arrives whole.
 */
import path from 'node:path';
import type { LogSource } from '../domain/agent-log';
import { localLog } from './agent-log';
import type { Db } from '../db/pool';
import { isRemoteRunLog, remoteLog } from '../ssh/remote-log';
import { loadSshTarget, typedSsh } from './ssh-workspace';
import type { ActivityDeps } from './deps';
import { typedFailure } from './failures';

export interface LogRead {
  logPath: string;
  /** The log is on this SSH target (its agent ran there): read over SSH. */
  sshTargetId?: string | null;
  /** Absent: the tail (`lines`, null for all). Present: what came since this offset. */
  since?: number;
  lines?: number | null;
}

export function agentLogReadActivities({ config, pool }: ActivityDeps) {
  return {
    async readAgentLog(input: LogRead): Promise<{ base64: string; offset: number }> {
      const log = input.sshTargetId
        ? await remoteLogOf(pool, input.sshTargetId, input.logPath)
        : localLogOf(config.logDir, input.logPath);
      const read =
        input.since === undefined
          ? await log.tail(input.lines ?? null).then((t) => ({ chunk: t.text, offset: t.offset }))
          : await log.since(input.since);
      return { base64: read.chunk.toString('base64'), offset: read.offset };
    },
  };
}

/** A log of this host's log folder, and nothing else. */
function localLogOf(logDir: string, logPath: string): LogSource {
  const resolved = path.resolve(logPath);
  if (!resolved.startsWith(path.resolve(logDir) + path.sep) || !resolved.endsWith('.log'))
    throw typedFailure('not_found');
  return localLog(resolved);
}

/** A run log on an SSH target this host talks to, and nothing else there; a target that does not answer is its typed refusal. */
export async function remoteLogOf(pool: Db, sshTargetId: string, logPath: string): Promise<LogSource> {
  const target = await loadSshTarget(pool, sshTargetId);
  if (!isRemoteRunLog(target, logPath)) throw typedFailure('not_found');
  const log = remoteLog(target, logPath);
  const typed = <T>(read: Promise<T>) => read.catch((err: unknown) => Promise.reject(typedSsh(err)));
  return { tail: (lines) => typed(log.tail(lines)), since: (offset) => typed(log.since(offset)) };
}

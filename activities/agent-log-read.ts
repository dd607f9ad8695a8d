/**
 * An agent's log read on its host, for a gateway elsewhere: the last lines, or what came since an
 * offset, from the executor that holds it (only one of its own run logs). Bytes travel as base64,
 * so a chunk that ends inside a character arrives whole.
 */
import { executorsOf } from '../executors/registry';
import type { ActivityDeps } from '../executors/support/deps';
import type { LogRead } from '../domain/agent-log';

export function agentLogReadActivities(deps: ActivityDeps) {
  const executors = executorsOf(deps);
  return {
    async readAgentLog(input: LogRead): Promise<{ base64: string; offset: number }> {
      const log = await executors.at(input).openLog(input, input.logPath);
      const read =
        input.since === undefined
          ? await log.tail(input.lines ?? null).then((t) => ({ chunk: t.text, offset: t.offset }))
          : await log.since(input.since);
      return { base64: read.chunk.toString('base64'), offset: read.offset };
    },
  };
}

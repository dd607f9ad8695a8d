/**
 * While an agent runs, each move of its task branch brings its objects home at once. The agent's
 * git writes its commits into the task's own store and then moves its branch in the repository;
 * until the objects come home, the owner's git in their checkout meets a branch whose commit it
 * does not have ("bad object" on a fetch, a gc or a push) [R9.1]. The periodic check of running
 * agents brought them home a minute later; now the folders the agent moves refs in are watched
 * (inotify), and a move is followed within milliseconds by the same untrusted-store import
 * (git/agent-objects-home.ts).
 *
 * Watched by the process that started the agent, and by a worker that finds it running after a
 * restart (executors/host/exits.ts recoverHostAgents); unwatched when its end is collected. Events
 * are coalesced: one import at a time per agent and one more after it, whatever the agent does to
 * its folders, so a flood of them costs at most one import in turn.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';

/** The ref folders an agent moves refs in (absolute), listed in its run folder when it started in the sandbox. */
export const refFoldersListPath = (logPath: string): string => logPath.replace(/\.log$/, '') + '.refs.json';

interface Watch {
  watchers: FSWatcher[];
  running: boolean;
  again: boolean;
}

const watches = new Map<string, Watch>();

/**
 * Watches an agent's ref folders; `bringHome` is run on each move (coalesced). Nothing listed (an
 * agent started without the sandbox, or before this was written): nothing to watch. Idempotent.
 */
export async function watchAgentRefs(
  exec: { id: string; log_path: string },
  bringHome: () => Promise<void>,
  logger: Pick<Logger, 'warn'>,
): Promise<void> {
  if (watches.has(exec.id)) return;
  const listed = await readFile(refFoldersListPath(exec.log_path), 'utf8').catch(() => null);
  let folders: unknown = [];
  try {
    folders = listed === null ? [] : JSON.parse(listed);
  } catch {
    folders = [];
  }
  if (!Array.isArray(folders) || watches.has(exec.id)) return;
  const w: Watch = { watchers: [], running: false, again: false };
  const onMove = (): void => {
    if (w.running) {
      w.again = true;
      return;
    }
    w.running = true;
    void (async () => {
      do {
        w.again = false;
        await bringHome().catch((err: unknown) =>
          logger.warn(
            { err, executionId: exec.id },
            "an agent's objects could not be brought home after its branch moved",
          ),
        );
      } while (w.again && watches.get(exec.id) === w);
      w.running = false;
    })();
  };
  for (const folder of folders) {
    if (typeof folder !== 'string') continue;
    try {
      const watcher = watch(folder, { persistent: false }, onMove);
      // A folder removed under the watch (a cleanup) ends it; the periodic check still brings home.
      watcher.on('error', () => watcher.close());
      w.watchers.push(watcher);
    } catch {
      // Not there (yet, or any more): the periodic check and the agent's end bring home all the same.
    }
  }
  watches.set(exec.id, w);
}

/** Ends the watch of an agent whose end was collected. */
export function unwatchAgentRefs(executionId: string): void {
  const w = watches.get(executionId);
  if (!w) return;
  watches.delete(executionId);
  for (const watcher of w.watchers) watcher.close();
}

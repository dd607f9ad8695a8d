/** Service processes a crash test kills and replaces: a worker of a harness, a Temporal dev server of its own. */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { startEmbeddedPostgres, type PostgresService } from '../../client/postgres-service';
import { resolveTemporalCli } from '../../client/temporal-cli';
import { SEARCH_ATTRIBUTES } from '../../domain/search-attributes';
import type { Harness } from './harness';

/** The harness's worker as its own process; `cleanups` ends the last one after the file. */
export function killableWorker(h: Harness, cleanups: (() => Promise<void> | void)[]) {
  let worker: ChildProcess = h.spawnWorker();
  cleanups.push(() => void worker.kill('SIGKILL'));
  return {
    async kill() {
      worker.kill('SIGKILL');
      await new Promise((r) => worker.once('exit', r));
    },
    replace() {
      worker = h.spawnWorker();
    },
  };
}

/** A Temporal dev server on this port whose history lives in `dbFile`: killed and started again, it keeps its workflows. */
export function startTemporalDevServer(port: number, dbFile: string): ChildProcess {
  return spawn(
    resolveTemporalCli(process.cwd()),
    ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--db-filename', dbFile, '--log-level', 'error', ...SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`])],
    { stdio: 'ignore' },
  );
}

export async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on port ${port}`);
}

/** An embedded PostgreSQL of the test file's own on this data dir and port; after a SIGKILL the old backends may hold shared memory a moment longer. */
export async function startPostgresAt(dataDir: string, port: number): Promise<PostgresService> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await startEmbeddedPostgres({ dataDir, port, password: 'test' });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * Keeps one part of `make start` (PostgreSQL, the Temporal dev server, the worker, the gateway)
 * running: when its process dies, the death is logged on one line and the part is started again
 * after the backoff of domain/restart-backoff.ts. Nothing else is touched: each part finds the
 * others again by itself (the services reconnect, the servers restart on their data).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { nextRestartWait, type RestartBackoff } from '../../domain/restart-backoff';

export interface PartExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One run of a part, as its start function hands it back once the process is up. */
export interface PartRun {
  pid: number;
  /** Settles when the process has exited, whoever ended it. */
  exited: Promise<PartExit>;
  /** Ends the process and resolves once it has exited; resolves at once when it already had. */
  stop(): Promise<void>;
}

export interface SupervisedPart {
  readonly name: string;
  /** The pid of the current run, or of the last one while a restart is pending. */
  readonly pid: number;
  /** Cancels a pending restart, lets a start under way finish, then stops the process. */
  stop(): Promise<void>;
}

export interface SuperviseOptions {
  backoff: RestartBackoff;
  log: (line: string) => void;
  /** Each run after the first, once it is up. */
  onRestart?: (run: PartRun) => void;
  /** Each death that is not part of stop(). */
  onDeath?: (exit: PartExit) => void;
}

export const describeExit = (exit: PartExit): string =>
  exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
/** The first line of an error's message: what a person reads, without a stack. */
export const errorLine = (err: unknown): string =>
  (err instanceof Error ? err.message : String(err))
    .split('\n')
    .find((line) => line.trim())
    ?.trim() ?? 'unknown error';
const seconds = (ms: number): string => `${ms / 1000} s`;

/**
 * Starts the part and keeps it running until stop(). A failed first start throws (the caller's
 * start-up failure); a failed restart is logged and tried again after a longer wait.
 */
export async function supervise(
  name: string,
  start: () => Promise<PartRun>,
  opts: SuperviseOptions,
): Promise<SupervisedPart> {
  let run = await start();
  let stopping = false;
  let cancelWait = (): void => {};
  let restarting: Promise<unknown> = Promise.resolve();

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      cancelWait = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const keepRunning = async (): Promise<void> => {
    let waitMs: number | null = null;
    let upSince = Date.now();
    for (;;) {
      const exit = await run.exited;
      if (stopping) return;
      opts.onDeath?.(exit);
      waitMs = nextRestartWait(opts.backoff, waitMs, Date.now() - upSince);
      opts.log(`${name} (pid ${run.pid}) died (${describeExit(exit)}); restarting in ${seconds(waitMs)}`);
      for (;;) {
        await wait(waitMs);
        if (stopping) return;
        const next = start().then((started) => (run = started));
        restarting = next;
        try {
          await next;
          break;
        } catch (err) {
          if (stopping) return;
          waitMs = nextRestartWait(opts.backoff, waitMs, 0);
          opts.log(
            `${name} did not start (${err instanceof Error ? err.message : String(err)}); retrying in ${seconds(waitMs)}`,
          );
        }
      }
      if (stopping) return; // stop() ends the run that just started
      upSince = Date.now();
      opts.log(`${name} restarted (pid ${run.pid})`);
      opts.onRestart?.(run);
    }
  };
  void keepRunning();

  return {
    name,
    get pid() {
      return run.pid;
    },
    async stop() {
      stopping = true;
      cancelWait();
      // A restart in flight is let finish (its failure was logged by keepRunning); then the run is stopped.
      await restarting.catch(() => {});
      await run.stop();
    },
  };
}

/**
 * Runs a command as a part: up once spawned; stopped with `stopSignal`, then SIGKILL after
 * `graceMs`. In its own process group, so a Ctrl-C in the terminal reaches the launcher alone,
 * which stops the parts in order.
 */
export async function spawnPart(
  command: string,
  args: string[],
  options: SpawnOptions,
  stopSignal: NodeJS.Signals = 'SIGTERM',
  graceMs = 10_000,
): Promise<PartRun> {
  const child = spawn(command, args, { ...options, detached: true });
  const exited = new Promise<PartExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  child.on('error', () => {}); // a failed kill of an exiting process; its exit event still comes
  return { pid: child.pid!, exited, stop: () => stopChild(child, exited, stopSignal, graceMs) };
}

/** Sends `signal`, then SIGKILL after `graceMs`; resolves once the child has exited. */
export async function stopChild(
  child: ChildProcess,
  exited: Promise<unknown>,
  signal: NodeJS.Signals,
  graceMs: number,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(kill);
}

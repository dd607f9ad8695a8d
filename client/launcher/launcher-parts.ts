/**
 * The parts `make start` started (client/launcher/launcher.ts): each under supervision, their pids kept
 * on file for an operator, and all of them stopped in layers. Apart from the launcher's start-up
 * sequence because a signal, a fault or a failed start-up all end here, at any point of it.
 */
import { rename, rm, writeFile } from 'node:fs/promises';
import { DEFAULT_RESTART_BACKOFF } from '../../domain/restart-backoff';
import { markApiRecordStopped, writeApiRecord } from '../api-record';
import { describeExit, errorLine, spawnPart, supervise, type SupervisedPart } from './supervisor';

/** Stop order: what depends on the others goes first. */
export type Layer = 'services' | 'containers' | 'temporal' | 'postgres';
// The container engine's API goes after the services that call it; its containers (and their agents) keep running.
const STOP_ORDER: Layer[] = ['services', 'containers', 'temporal', 'postgres'];

export class LaunchedParts {
  private readonly parts: { layer: Layer; part: Promise<SupervisedPart> }[] = [];
  readonly running = new Map<string, SupervisedPart>();
  up = false;
  startupDeath: string | null = null;
  stopping = false;
  // Written whole and renamed, one write at a time, so a reader never sees half a file.
  private pidsWritten: Promise<void> = Promise.resolve();
  /** The api.json that tells `tws` where the API is, once it answers: its folder and its write. */
  private apiRecord: { dataDir: string; written: Promise<void> } | null = null;
  /** Said on a stop of a system that was up, before its services stop (client/launcher/agents-left.ts). */
  farewell: (() => Promise<string | null>) | null = null;

  /** `afterStopped` runs once a layer's parts are stopped (what a layer holds besides its parts). */
  constructor(
    private readonly pidsFile: string,
    private readonly afterStopped: (layer: Layer) => Promise<void>,
  ) {}

  private writePids(): void {
    const pidsFile = this.pidsFile;
    const pids = {
      launcher: process.pid,
      ...Object.fromEntries([...this.running].map(([name, part]) => [name, part.pid])),
    };
    this.pidsWritten = this.pidsWritten
      .then(async () => {
        await writeFile(`${pidsFile}.tmp`, JSON.stringify(pids, null, 2) + '\n');
        await rename(`${pidsFile}.tmp`, pidsFile);
      })
      .catch((err) =>
        console.error(`launcher: could not write ${pidsFile}: ${err instanceof Error ? err.message : err}`),
      );
  }

  /** Records, once the API answers, the URL it listens on (`<dataDir>/api.json`, for `tws`). */
  async recordApi(dataDir: string, url: string): Promise<void> {
    if (this.stopping) return;
    this.apiRecord = { dataDir, written: writeApiRecord(dataDir, url) };
    await this.apiRecord.written;
  }

  /**
   * TWS_CONTAINER_ENGINE=podman: the container executor's engine, Podman's Docker Engine API on the
   * data folder's socket, run as a part (started again if it dies; its containers outlive it).
   */
  async runPodmanService(socket: string, cwd: string): Promise<void> {
    await rm(socket, { force: true });
    await this.run('podman', 'containers', () =>
      spawnPart('podman', ['system', 'service', '--time=0', `unix://${socket}`], {
        cwd,
        stdio: ['ignore', 'ignore', 'inherit'],
      }),
    );
  }

  /** Starts a part under supervision; a death before the system is up is a start-up failure. */
  async run(name: string, layer: Layer, start: Parameters<typeof supervise>[1]): Promise<SupervisedPart> {
    if (this.stopping) throw new Error('stopping');
    const part = supervise(name, start, {
      backoff: DEFAULT_RESTART_BACKOFF,
      log: (line) => console.error(`launcher: ${line}`),
      onDeath: (exit) => {
        if (!this.up) this.startupDeath ??= `${name} exited during start-up (${describeExit(exit)})`;
      },
      onRestart: () => this.writePids(),
    });
    this.parts.push({ layer, part });
    this.running.set(name, await part);
    this.writePids();
    return part;
  }

  async stopAll(code: number): Promise<void> {
    if (this.stopping) return;

    this.stopping = true;
    // First, so no CLI is sent to an API that is going away.
    if (this.apiRecord) {
      // A write that failed is recordApi's caller's failure (the start-up), not the stop's.
      await this.apiRecord.written.catch(() => {});
      // Kept, marked stopped: tws then names this instance's port as the one that is down.
      await markApiRecordStopped(this.apiRecord.dataDir).catch((err: unknown) =>
        console.error(`launcher: could not mark api.json stopped: ${err instanceof Error ? err.message : err}`),
      );
    }
    process.exitCode = code; // also when a part that never settles lets the event loop run dry
    console.log('\nstopping…');
    // Asked while the API still answers; a count that fails is said by the farewell itself, and
    // a farewell that fails says it could not count, never nothing (agents may be left running).
    const farewell =
      this.up && this.farewell
        ? await this.farewell().catch(
            (err: unknown) =>
              `could not count the agents left running (${errorLine(err)}): \`npx tws stop --all\` after the next make start stops them`,
          )
        : null;
    if (farewell) console.log(farewell);
    for (const layer of STOP_ORDER) {
      await Promise.all(
        this.parts
          .filter((p) => p.layer === layer)
          .map((p) =>
            p.part.then(
              (part) => part.stop(),
              () => {},
            ),
          ),
      );
      await this.afterStopped(layer);
    }
    await this.pidsWritten;
    await rm(this.pidsFile, { force: true });
    process.exit(code);
  }
}

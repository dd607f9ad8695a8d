/**
 * One `make start` per data folder. The launcher claims its data folder before it checks a port,
 * writes a file or starts a part; a second start on the same folder finds the claim of a live
 * launcher and refuses at once, touching nothing of the running one (its pids.json, its workflow
 * bundle, its database).
 *
 * The claim itself is held by the kernel, not by a file: a Linux abstract-namespace socket named
 * after the folder's real path. Binding it is atomic and exclusive, and the kernel releases it
 * when its holder ends, however it ends (SIGKILL included), so there is no stale claim to take
 * over and no window in which two starts can both believe they hold the folder (a pid file alone
 * had one: it is created empty before its pid is written, and a racing start took the empty file
 * for a stale one). `<dataDir>/launcher.pid` is the record a person and `tws` read: written by the
 * holder alone, atomically, and removed as it exits. A start that loses asks the holder for its
 * pid over the socket. A record that names a live launcher not holding the socket (one started in
 * another network namespace on a shared folder) is refused as well: fail closed.
 */
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { mkdir, readFile, realpath, rename, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

export type Claim = { taken: true } | { taken: false; heldBy: number };

const claimFile = (dataDir: string) => path.join(dataDir, 'launcher.pid');

/**
 * True while `pid` is a running launcher: its command line runs client/launcher/launcher, or
 * client/launcher (where it lived before; a launcher of an older checkout still running holds its claim).
 */
function isLauncher(pid: number): boolean {
  try {
    return /client\/launcher(\/launcher)?\.(ts|js)/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return false; // no such process
  }
}

const recordedHolder = async (file: string): Promise<number> =>
  Number((await readFile(file, 'utf8').catch(() => '')).trim()) || 0;

/** The abstract socket that stands for the folder: one name per real path, nothing on disk. */
const lockName = (realDir: string) =>
  `\0task-workspaces-data-${createHash('sha256').update(realDir).digest('hex').slice(0, 32)}`;

/** Binds the folder's socket; null when another process holds it. */
function bind(name: string): Promise<net.Server | null> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.end(`${process.pid}\n`));
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen(name, () => {
      server.unref(); // the claim never keeps the process alive by itself
      resolve(server);
    });
  });
}

/** The pid the holder of the folder's socket answers with; 0 when it could not be asked. */
function askHolder(name: string): Promise<number> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = net.connect(name);
    socket.setTimeout(2000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('close', () => resolve(Number(answer.trim()) || 0));
    socket.on('error', () => {}); // 'close' follows and answers 0
  });
}

/**
 * Claims the data folder for this process, released when it exits. Whoever binds the folder's
 * socket first holds it; every other start is told the holder's pid.
 */
export async function claimDataFolder(dataDir: string): Promise<Claim> {
  await mkdir(dataDir, { recursive: true });
  const file = claimFile(dataDir);
  const name = lockName(await realpath(dataDir));
  for (let attempt = 0; attempt < 5; attempt++) {
    const server = await bind(name);
    if (!server) {
      const holder = await askHolder(name);
      if (holder) return { taken: false, heldBy: holder };
      continue; // the holder ended between the bind and the question: try again
    }
    const recorded = await recordedHolder(file);
    if (recorded && recorded !== process.pid && isLauncher(recorded)) {
      server.close();
      return { taken: false, heldBy: recorded };
    }
    // The record, replaced whole: a reader sees the old one or this one, never an empty file.
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, `${process.pid}\n`, { mode: 0o600 });
    await rename(temporary, file);
    process.once('exit', () => {
      try {
        if (Number(readFileSync(file, 'utf8').trim()) === process.pid) rmSync(file, { force: true });
      } catch {
        // already gone
      }
    });
    return { taken: true };
  }
  return { taken: false, heldBy: await recordedHolder(file) };
}

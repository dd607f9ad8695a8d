/**
 * One `make start` per data folder. The launcher claims `<dataDir>/launcher.pid` before it
 * checks a port, writes a file or starts a part; a second start on the same folder finds the
 * claim of a live launcher and refuses at once, touching nothing of the running one (its
 * pids.json, its workflow bundle, its database). A claim whose launcher is gone (killed outright)
 * is taken over; a pid that now belongs to some other program is not a launcher's.
 */
import { readFileSync, rmSync } from 'node:fs';
import { link, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

export type Claim = { taken: true } | { taken: false; heldBy: number };

const claimFile = (dataDir: string) => path.join(dataDir, 'launcher.pid');

/** True while `pid` is a running launcher (its command line runs client/launcher). */
function isLauncher(pid: number): boolean {
  try {
    return /client\/launcher\.(ts|js)/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return false; // no such process
  }
}

const holderOf = async (file: string): Promise<number> =>
  Number((await readFile(file, 'utf8').catch(() => '')).trim()) || 0;

/**
 * Removes a claim whose launcher is gone. Moved aside first (a rename is atomic), so a start that
 * raced this one to the same stale claim and has already put its own in place is not removed
 * unseen: what was moved is read, and a live launcher's claim is put back (link: never over a
 * newer one) and answered as its holder.
 */
async function setAsideStale(file: string): Promise<number | null> {
  const aside = `${file}.stale-${process.pid}`;
  try {
    await rename(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null; // removed by the other start
    throw err;
  }
  const moved = await holderOf(aside);
  if (moved && moved !== process.pid && isLauncher(moved)) {
    await link(aside, file).catch(() => {}); // a newer claim in its place keeps its place
    await rm(aside, { force: true });
    return moved;
  }
  await rm(aside, { force: true });
  return null;
}

/**
 * Claims the data folder for this process, released when it exits. Two starts at once: the
 * exclusive create decides; a stale claim is removed only after its holder is seen gone (and
 * never another start's fresh claim in its place: setAsideStale), and whoever then creates the
 * file first holds it.
 */
export async function claimDataFolder(dataDir: string): Promise<Claim> {
  await mkdir(dataDir, { recursive: true });
  const file = claimFile(dataDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      // Released as the process ends, however it ends short of SIGKILL, and only if still its own.
      process.once('exit', () => {
        try {
          if (Number(readFileSync(file, 'utf8').trim()) === process.pid) rmSync(file, { force: true });
        } catch {
          // already gone
        }
      });
      return { taken: true };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = await holderOf(file);
    if (holder && holder !== process.pid && isLauncher(holder)) return { taken: false, heldBy: holder };
    const live = await setAsideStale(file);
    if (live) return { taken: false, heldBy: live };
  }
  return { taken: false, heldBy: await holderOf(file) };
}

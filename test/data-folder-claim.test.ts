/**
 * One `make start` per data folder, raced on purpose: starts that all find the
 * same stale claim at the same moment, as real processes whose command line runs
 * `client/launcher/launcher.js` (what the claim recognises a launcher by), each claiming through the built
 * client/launcher/data-folder-claim.js. Exactly one may hold the folder, and every other names it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServices } from '../client/launcher/service-build';

let scratch: string;
let launcher: string;

beforeAll(() => {
  buildServices(path.resolve('.'));
  scratch = mkdtempSync(path.join(os.tmpdir(), 'tws-claim-'));
  mkdirSync(path.join(scratch, 'client', 'launcher'), { recursive: true });
  launcher = path.join(scratch, 'client', 'launcher', 'launcher.js');
  // Claims, says the outcome, and holds its claim until told to go (stdin closes).
  writeFileSync(
    launcher,
    `const { claimDataFolder } = require(${JSON.stringify(path.resolve('.build/client/launcher/data-folder-claim.js'))});
claimDataFolder(process.argv[2]).then((claim) => {
  process.stdout.write(JSON.stringify(claim) + '\\n');
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
});
`,
  );
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Start {
  pid: number;
  claim: Promise<{ taken: boolean; heldBy?: number }>;
  stop: () => Promise<void>;
  exited: Promise<void>;
}

function start(dataDir: string): Start {
  const child = spawn(process.execPath, [launcher, dataDir], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const claim = new Promise<{ taken: boolean; heldBy?: number }>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(JSON.parse(out));
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before claiming`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: child.pid!,
    claim,
    exited,
    stop: async () => {
      child.stdin!.end();
      await exited;
    },
  };
}

/** A pid that runs nothing now: a process that has ended. */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

describe('claiming a data folder', () => {
  it('eight starts on one stale claim at once: exactly one holds the folder, the others name it; its exit releases it', async () => {
    for (let round = 0; round < 6; round++) {
      const dataDir = path.join(scratch, `data-${round}`);
      mkdirSync(dataDir);
      const file = path.join(dataDir, 'launcher.pid');
      writeFileSync(file, `${await deadPid()}\n`); // a launcher killed outright left it
      const starts = Array.from({ length: 8 }, () => start(dataDir));
      const claims = await Promise.all(starts.map((s) => s.claim));
      const holders = starts.filter((_, i) => claims[i]!.taken);
      expect(holders, `round ${round}: ${JSON.stringify(claims)}`).toHaveLength(1);
      const holder = holders[0]!;
      for (const [i, claim] of claims.entries()) if (!claim.taken) expect(claim.heldBy, `start ${i}`).toBe(holder.pid);
      expect(Number(readFileSync(file, 'utf8').trim())).toBe(holder.pid);
      expect(readdirSync(dataDir).sort()).toEqual(['launcher.pid']); // nothing set aside is left behind
      await Promise.all(starts.filter((s) => s !== holder).map((s) => s.stop()));
      expect(Number(readFileSync(file, 'utf8').trim())).toBe(holder.pid);
      await holder.stop();
      expect(existsSync(file)).toBe(false);
    }
  }, 120_000);

  it('a record naming a live launcher that does not hold the folder (another network namespace) is refused, and kept', async () => {
    const dataDir = path.join(scratch, 'other-namespace');
    mkdirSync(dataDir);
    // A live process whose command line runs client/launcher/launcher.js but that never claimed here.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)', launcher], { stdio: 'ignore' });
    try {
      writeFileSync(path.join(dataDir, 'launcher.pid'), `${other.pid}\n`);
      const s = start(dataDir);
      expect(await s.claim).toEqual({ taken: false, heldBy: other.pid });
      await s.stop();
      expect(readFileSync(path.join(dataDir, 'launcher.pid'), 'utf8').trim()).toBe(String(other.pid));
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('a holder killed outright releases the folder at once: the next start holds it', async () => {
    const dataDir = path.join(scratch, 'killed');
    mkdirSync(dataDir);
    const first = start(dataDir);
    expect(await first.claim).toEqual({ taken: true });
    process.kill(first.pid, 'SIGKILL'); // no exit handler runs: its record stays behind
    await first.exited;
    expect(Number(readFileSync(path.join(dataDir, 'launcher.pid'), 'utf8').trim())).toBe(first.pid);
    const second = start(dataDir);
    expect(await second.claim).toEqual({ taken: true });
    expect(Number(readFileSync(path.join(dataDir, 'launcher.pid'), 'utf8').trim())).toBe(second.pid);
    await second.stop();
  });

  it("a pid that now belongs to another program is not a launcher's: its claim is taken over", async () => {
    const dataDir = path.join(scratch, 'reused-pid');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'launcher.pid'), `${process.pid}\n`); // vitest's worker, not a launcher
    const s = start(dataDir);
    expect(await s.claim).toEqual({ taken: true });
    await s.stop();
  });
});

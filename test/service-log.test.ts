/**
 * The services' log under `make start` (client/launcher/service-log.ts): each start begins it anew, the
 * previous one kept beside it, the service's alone; a start-up failure's one line ends with what
 * the services said last in plain words, not a JSON line, a stack frame or Node's version.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { closeSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureLine, openServiceLog } from '../client/launcher/service-log';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tws-service-log-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the services' log of make start", () => {
  it('begins anew at each start, keeps the previous one as services.log.1, and is the service’s alone', async () => {
    await writeFile(path.join(dir, 'services.log'), 'the last start\n', { mode: 0o644 });
    const log = await openServiceLog(dir);
    writeSync(log.fd, '{"level":30,"msg":"worker running"}\n');
    expect(await readFile(path.join(dir, 'services.log.1'), 'utf8')).toBe('the last start\n');
    expect(await readFile(log.file, 'utf8')).toBe('{"level":30,"msg":"worker running"}\n');
    expect((await stat(log.file)).mode & 0o777).toBe(0o600);
    closeSync(log.fd);
  });

  it("a start-up failure's line ends with the services' last plain words, when there are any", async () => {
    const log = await openServiceLog(dir);
    expect(await failureLine('worker exited during start-up (exit code 1)', log)).toBe(
      'start-up failed: worker exited during start-up (exit code 1)',
    );
    writeSync(
      log.fd,
      [
        '{"level":30,"name":"worker","msg":"agents run in bubblewrap"}',
        '/work/.build/worker/main.js:12',
        'Error: DATABASE_URL is required (the launcher sets it)',
        '    at main (/work/.build/worker/main.js:12:9)',
        '{',
        '  code: 1',
        '}',
        '',
        'Node.js v20.19.4',
        '',
      ].join('\n'),
    );
    expect(await failureLine('worker exited during start-up (exit code 1)', log)).toBe(
      `start-up failed: worker exited during start-up (exit code 1) (the services' log ${log.file} ends: Error: DATABASE_URL is required (the launcher sets it))`,
    );
    expect(await failureLine('the API did not answer', null)).toBe('start-up failed: the API did not answer');
    closeSync(log.fd);
  });
});

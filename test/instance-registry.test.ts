/**
 * Two instances on one host never share an agent uid: a start registers its instance's range and
 * one that overlaps another instance's, whose data folder is still there, is refused with a free
 * range to use. A registration whose data folder is gone no longer counts. Real files, as root.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerAgentUids } from '../client/launcher/instance-registry';
import { instanceIdOf } from '../domain/instance';

describe("each instance's agent uids are its own", () => {
  it('an overlapping range is refused while the other data folder is there; a disjoint one and one after it is gone are taken', async () => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'tws-registry-'));
    const registry = path.join(scratch, 'instances');
    const dataOf = (name: string) => {
      const dir = path.join(scratch, name);
      mkdirSync(dir);
      return dir;
    };
    const first = { instanceId: instanceIdOf(undefined, 'box', dataOf('a')), dataDir: path.join(scratch, 'a') };
    const second = { instanceId: instanceIdOf(undefined, 'box', dataOf('b')), dataDir: path.join(scratch, 'b') };
    expect(second.instanceId).not.toBe(first.instanceId);
    expect(await registerAgentUids({ ...first, agentUids: { first: 200000, last: 299999 } }, registry)).toBeNull();
    // The same instance again: its own registration, no refusal.
    expect(await registerAgentUids({ ...first, agentUids: { first: 200000, last: 299999 } }, registry)).toBeNull();
    const refused = await registerAgentUids({ ...second, agentUids: { first: 250000, last: 349999 } }, registry);
    expect(refused).toContain('overlap');
    expect(refused).toContain('TWS_AGENT_UIDS=350000-449999');
    expect(readdirSync(registry).sort()).toEqual([`${first.instanceId}.json`]);
    expect(await registerAgentUids({ ...second, agentUids: { first: 300000, last: 399999 } }, registry)).toBeNull();
    // The first instance's data folder removed: its uids are free again.
    rmSync(first.dataDir, { recursive: true });
    const third = { instanceId: instanceIdOf(undefined, 'box', dataOf('c')), dataDir: path.join(scratch, 'c') };
    expect(await registerAgentUids({ ...third, agentUids: { first: 200000, last: 299999 } }, registry)).toBeNull();
    expect(existsSync(path.join(registry, `${first.instanceId}.json`))).toBe(false);
    expect(readdirSync(registry)).not.toContain('.lock');
    rmSync(scratch, { recursive: true, force: true });
  });
});

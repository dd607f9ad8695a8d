/**
 * An instance of the service: one data folder's worker and gateway. Two instances may share a
 * host (two checkouts, two `make start`s), and then a host id names them both. Everything an
 * instance makes on the host that the other could see (its containers, its agents' control groups)
 * carries its instance id, and each instance judges (sweeps, adopts, removes) only what carries its
 * own: `TWS_INSTANCE_ID`, else a digest of the host id and the data folder, the same on every start.
 */

const INSTANCE_ID = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** FNV-1a, 64 bits: a short stable digest without a crypto import (domain/ does no I/O and needs none). */
function fnv1a64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, '0');
}

export function instanceIdOf(raw: string | undefined, hostId: string, dataDir: string): string {
  if (raw) {
    if (!INSTANCE_ID.test(raw))
      throw new Error('TWS_INSTANCE_ID must be 1-32 lowercase letters, digits or "-", starting with a letter or digit');
    return raw;
  }
  return fnv1a64(`${hostId}\0${dataDir.replace(/\/+$/, '')}`);
}

/** The control-group folder of an instance's agents when the operator names none (TWS_CGROUP_PARENT). */
export const instanceCgroupParent = (instanceId: string): string => `task-workspaces/${instanceId}`;

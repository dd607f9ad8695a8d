/**
 * What the service's environment says about the boundary around its agents: the sandbox, the
 * host uids they run as, their network, and who may run one in the source checkout itself.
 * Read by domain/config.ts's loadConfig; each setting's parser refuses a bad value in one line.
 */
import type { AgentNetworkPolicy, AgentSandboxMode } from './sandbox';

export function parseSandboxMode(raw: string | undefined): AgentSandboxMode {
  const mode = raw || 'auto';
  if (mode !== 'auto' && mode !== 'bwrap' && mode !== 'none')
    throw new Error('TWS_AGENT_SANDBOX must be auto, bwrap or none');
  return mode;
}

/** The host uids agents run as, one per workspace (TWS_AGENT_UIDS, `first-last`, issue 45). */
export interface UidRange {
  first: number;
  last: number;
}

export function parseUidRange(raw: string | undefined): UidRange {
  const text = raw || '200000-299999';
  const m = /^([0-9]+)-([0-9]+)$/.exec(text);
  const first = m ? Number(m[1]) : NaN;
  const last = m ? Number(m[2]) : NaN;
  // Never root, never a system account, never past what a 32-bit uid holds (65534 is nobody).
  if (!m || first < 1000 || last < first || last > 4_294_967_294 || (first <= 65534 && last >= 65534))
    throw new Error('TWS_AGENT_UIDS must be first-last, 1000 or above, without 65534 (for example 200000-299999)');
  return { first, last };
}

export function parseNetworkPolicy(raw: string | undefined): AgentNetworkPolicy {
  const policy = raw || 'egress';
  if (policy !== 'egress' && policy !== 'none' && policy !== 'host')
    throw new Error('TWS_AGENT_NETWORK must be egress, none or host');
  return policy;
}

/**
 * Who may launch or resume a `local` agent (TWS_LOCAL_EXECUTOR, issue 32): it works in the source
 * checkout itself, with that checkout's git folder writable (its objects, its refs, the branch the
 * user has checked out), so it can damage the user's own repository. `operator` (the default):
 * operator tokens only; `all`: user tokens too; `off`: nobody.
 */
export type LocalExecutorPolicy = 'operator' | 'all' | 'off';

export function parseLocalExecutor(raw: string | undefined): LocalExecutorPolicy {
  const policy = raw || 'operator';
  if (policy !== 'operator' && policy !== 'all' && policy !== 'off')
    throw new Error('TWS_LOCAL_EXECUTOR must be operator, all or off');
  return policy;
}

/** Whether a caller of this role may run a `local` agent under the policy. */
export const localExecutorAllowed = (policy: LocalExecutorPolicy, role: 'user' | 'operator' | null): boolean =>
  policy === 'all' || (policy === 'operator' && role === 'operator');

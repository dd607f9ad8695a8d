import { describe, expect, it } from 'vitest';
import { parseUidRange } from '../../domain/agent-settings';
import { loadConfig } from '../../domain/config';

const defaults = { cwd: '/srv', hostname: 'h1' };

describe('configuration', () => {
  it('the gateway runs its launches unless TWS_GATEWAY_RUNS_LAUNCHES is 0', () => {
    expect(loadConfig({}, defaults).gatewayRunsLaunches).toBe(true);
    expect(loadConfig({ TWS_GATEWAY_RUNS_LAUNCHES: '1' }, defaults).gatewayRunsLaunches).toBe(true);
    expect(loadConfig({ TWS_GATEWAY_RUNS_LAUNCHES: '0' }, defaults).gatewayRunsLaunches).toBe(false);
  });
  it('refuses a switch that is neither 0 nor 1, rather than guessing', () => {
    for (const bad of ['yes', 'false', 'true', '2'])
      expect(() => loadConfig({ TWS_GATEWAY_RUNS_LAUNCHES: bad }, defaults)).toThrow(
        /TWS_GATEWAY_RUNS_LAUNCHES must be 0 or 1/,
      );
  });
  it('agents’ uids come from TWS_AGENT_UIDS: never root, a system account or nobody', () => {
    expect(loadConfig({}, defaults).agentUids).toEqual({ first: 200000, last: 299999 });
    expect(parseUidRange('100000-100009')).toEqual({ first: 100000, last: 100009 });
    for (const bad of ['0-100', '500-2000', '60000-70000', '300-200', '200000', 'a-b', '200000-5000000000'])
      expect(() => parseUidRange(bad), bad).toThrow(/TWS_AGENT_UIDS/);
  });
});

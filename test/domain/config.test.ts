import { describe, expect, it } from 'vitest';
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
});

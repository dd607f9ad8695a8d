import { describe, expect, it } from 'vitest';
import { agentEnvironment } from '../../domain/agent-env';

describe('agent environment', () => {
  it('is an allow-list: the service variables stay out, the agent gets its identity', () => {
    const env = agentEnvironment(
      {
        PATH: '/bin',
        HOME: '/root',
        LANG: 'C.UTF-8',
        LC_ALL: 'C',
        TZ: 'UTC',
        DATABASE_URL: 'postgres://u:p@h/db',
        TWS_OPERATOR_TOKEN: 'op',
        TEMPORAL_ADDRESS: 'x:1',
        SOMETHING_ELSE: 'y',
      },
      { sessionId: 's', taskId: 't', workspace: '/w' },
      { FOO: 'bar', TWS_SESSION_ID: 'spoofed' },
    );
    expect(env).toEqual({
      PATH: '/bin',
      HOME: '/root',
      LANG: 'C.UTF-8',
      LC_ALL: 'C',
      TZ: 'UTC',
      FOO: 'bar',
      TWS_SESSION_ID: 's',
      TWS_TASK_ID: 't',
      TWS_WORKSPACE: '/w',
    });
  });
});

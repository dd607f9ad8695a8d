/** Waits for a scenario's preparing agent (one that commits and exits) to end, and refuses one that failed. */
import type { BenchContext } from './context';

export async function agentEndedCleanly(ctx: BenchContext, sessionId: string, what: string): Promise<void> {
  for (const until = Date.now() + 120_000; Date.now() < until;) {
    const s = await ctx.api.call<{ execution?: { state: string; exitCode?: number | null } }>(
      'GET',
      `/v1/sessions/${sessionId}`,
    );
    const execution = s.body.execution;
    if (execution && execution.state !== 'running') {
      if (execution.exitCode !== 0) throw new Error(`${what} ended with ${JSON.stringify(execution)}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not end`);
}

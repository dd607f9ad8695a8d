/**
 * Scenario 12: what supervising one agent costs (target: ≤ 1 MB PSS and ≤ 5 ms CPU to start
 * per agent, beside a bare `sh` wrapper's floor). The measurement is bench/supervision.ts's (also
 * run alone by bench/supervisor-cost.ts): agents of each kind started through this process's
 * process starter as the product starts its own, measured once started and killed.
 */
import type { BenchContext } from '../context';
import { measureSupervision, type SupervisionResult } from '../supervision';

export type { SupervisionResult };

export async function runSupervision(ctx: BenchContext): Promise<SupervisionResult> {
  const result = await measureSupervision(ctx.config.supervision.agents);
  const now = result.supervisor;
  ctx.log(
    `supervision: C supervisor PSS p50 ${now.pssP50Mb} MB, CPU to start p50 ${now.cpuP50Ms} ms (${now.cpuAboveFloorP50Ms} ms above the exec floor)`,
  );
  return result;
}

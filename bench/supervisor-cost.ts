/**
 * What supervising one agent costs, alone, without starting the system: the
 * measurement of bench/supervision.ts (also scenario 12 of `make bench`), printed as a table.
 *
 *   node --import tsx bench/supervisor-cost.ts      # N=20; SUPERVISOR_BENCH_N=50 for more
 */
import os from 'node:os';
import { measureSupervision, supervisionTable } from './supervision';

async function main(): Promise<void> {
  const n = Number(process.env.SUPERVISOR_BENCH_N ?? 20);
  const result = await measureSupervision(n);
  console.log(
    [
      `Supervisor cost per agent, N=${n} each (${os.cpus().length} cores, ${os.release()}; started by ${result.startedBy}):`,
      ...supervisionTable(result),
      'Target: ≤ 1 MB PSS and ≤ 5 ms CPU to start per agent.',
    ].join('\n'),
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

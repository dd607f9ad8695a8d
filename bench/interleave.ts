/**
 * The measurement loop every latency scenario shares: product, bare floor and engine floor
 * samples in alternating blocks (product → floor → engine, then engine → floor → product), so
 * drift and noise hit all three; CPU is accounted around the product's and the floor's blocks.
 */
import type { BenchContext } from './context';
import { CpuAccount } from './cpu';
import type { FloorPhases } from './floor-steps';
import { elapsedMs, indexNearest, medianParts, ratio, round, summarize } from './stats';

/** One product sample: its latency and session, or the error code it failed with. */
export type ProductSample = { ms: number; sessionId: string } | { failure: string };

export interface InterleavedSamples {
  product: { ms: number; sessionId: string }[];
  floorMs: number[];
  floorParts: FloorPhases[];
  engineMs: number[];
  productCpu: CpuAccount;
  floorCpu: CpuAccount;
  failureCodes: Record<string, number>;
}

export async function interleaved(
  ctx: BenchContext,
  plan: { samples: number; block: number; label: string },
  run: { product: () => Promise<ProductSample>; floor: () => Promise<FloorPhases>; engine: () => Promise<number> },
): Promise<InterleavedSamples> {
  const out: InterleavedSamples = {
    product: [],
    floorMs: [],
    floorParts: [],
    engineMs: [],
    productCpu: new CpuAccount(ctx.cpu),
    floorCpu: new CpuAccount(ctx.cpu),
    failureCodes: {},
  };
  for (let b = 0; b * plan.block < plan.samples; b++) {
    const n = Math.min(plan.block, plan.samples - b * plan.block);
    for (const kind of b % 2 === 0
      ? (['product', 'floor', 'engine'] as const)
      : (['engine', 'floor', 'product'] as const)) {
      if (kind === 'engine') {
        for (let i = 0; i < n; i++) out.engineMs.push(await run.engine());
        continue;
      }
      await (kind === 'product' ? out.productCpu : out.floorCpu).around(async () => {
        for (let i = 0; i < n; i++) {
          if (kind === 'product') {
            const sample = await run.product();
            if ('failure' in sample) out.failureCodes[sample.failure] = (out.failureCodes[sample.failure] ?? 0) + 1;
            else out.product.push(sample);
          } else {
            const start = performance.now();
            out.floorParts.push(await run.floor());
            out.floorMs.push(elapsedMs(start));
          }
        }
      });
    }
    if ((b + 1) % 5 === 0)
      ctx.log(
        `${plan.label}: ${out.product.length}/${plan.samples} product, ${out.floorMs.length}/${plan.samples} floor`,
      );
  }
  return out;
}

/** What a latency scenario reports of its samples against the bare floor and the engine floor of its shape, and its sample nearest the product's median. */
export function compared<S>(s: InterleavedSamples, shape: S) {
  const product = summarize(s.product.map((p) => p.ms));
  const floor = summarize(s.floorMs);
  const engine = summarize(s.engineMs);
  return {
    nearest:
      s.product[
        indexNearest(
          s.product.map((p) => p.ms),
          product.p50,
        )
      ] ?? null,
    report: {
      product,
      floor,
      floorParts: medianParts(s.floorParts),
      ratioP50: ratio(product.p50, floor.p50),
      engine,
      engineShape: shape,
      ratioToFloorsP50: ratio(product.p50, floor.p50 + engine.p50),
      cpuPerLaunchMs: { product: s.productCpu.per(s.product.length), floor: s.floorCpu.per(s.floorMs.length) },
      failures: Object.values(s.failureCodes).reduce((sum, n) => sum + n, 0),
      failureCodes: s.failureCodes,
      samplesMs: {
        product: s.product.map((p) => round(p.ms, 1)),
        floor: s.floorMs.map((x) => round(x, 1)),
        engine: s.engineMs.map((x) => round(x, 1)),
      },
    },
  };
}

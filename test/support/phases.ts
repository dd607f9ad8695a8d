import type { Harness } from './harness';

/** Waits until a cleanup workflow reports a phase (through its progress query). */
export async function waitForPhase(h: Harness, workflowId: string, phase: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const progress = await h.temporal.workflow
      .getHandle(workflowId)
      .query<{ phase: string }>('progress')
      .catch(() => null);
    if (progress?.phase === phase) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`workflow never reached phase ${phase}`);
}

/**
 * Runs `work` for each item, at most `lanes` at a time, and answers in the items' order. No I/O,
 * so workflows and activities share it. In workflow code it is deterministic: each lane takes
 * the next item when its previous one ends, and a replay sees those ends in the order the
 * history recorded them.
 */
export async function inLanes<T, R>(items: T[], lanes: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, lanes), items.length) }, lane));
  return results;
}

/** The orphan sweep's decision for one folder under the workspace root [R6.7]. Pure. */
export type SweepVerdict = { action: 'remove' } | { action: 'keep'; reason: 'live' | 'young' | 'doubt' | 'hidden' };

function within(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);
}

/** A folder is live when a live record names it, something inside it, or one of its ancestors. */
function isReferenced(folder: string, livePaths: string[]): boolean {
  return livePaths.some((live) => within(live, folder) || within(folder, live));
}

export function sweepVerdict(input: {
  name: string;
  folder: string;
  livePaths: string[];
  ageMs: number;
  graceMs: number;
}): SweepVerdict {
  if (input.name.startsWith('.')) return { action: 'keep', reason: 'hidden' };
  if (isReferenced(input.folder, input.livePaths)) return { action: 'keep', reason: 'live' };
  if (!(input.ageMs >= input.graceMs)) return { action: 'keep', reason: 'young' };
  return { action: 'remove' };
}

export interface SweepResult {
  removed: string[];
  kept: { name: string; reason: string }[];
  dryRun: boolean;
  /** Containers labelled as this service's on the host (the `container` executor): absent where no engine is configured. */
  containers?: { removed: string[]; kept: { id: string; reason: string }[] };
}

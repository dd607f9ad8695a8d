/**
 * Reading the metric names out of PromQL, and the series out of a Prometheus text exposition:
 * enough to hold the shipped dashboard and alert rules to what /metrics serves.
 */

/** Aggregation operators: followed by `by (...)` or `(`, never a metric. */
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
/** Keywords and binary operators spelled as words. */
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'and',
  'or',
  'unless',
  'atan2',
  'inf',
  'nan',
]);

/**
 * The metric names an expression selects: identifiers that are not a function call, an
 * aggregation, a keyword, a label (inside `{...}` or a `by`/`on`/… list), a string, a duration
 * or a Grafana variable. A histogram's series are named as queried (`x_bucket`).
 */
export function metricNamesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const [, name, call] of bare.matchAll(/(?<![\w.:])([a-zA-Z_:][\w:]*)(?![\w:])(\s*\()?/g)) {
    if (call || AGGREGATIONS.has(name!) || KEYWORDS.has(name!)) continue;
    names.add(name!);
  }
  return [...names].sort();
}

interface Exposition {
  /** `# TYPE` lines: family name → type. */
  types: Map<string, string>;
  /** Families declared more than once (two registries' output pasted together badly). */
  declaredTwice: string[];
  /** Names of the sample lines (a histogram's as `x_bucket`, `x_sum`, `x_count`). */
  samples: Set<string>;
  /** Samples whose family no `# TYPE` line declares. */
  undeclared: string[];
}

const SAMPLE = /^([a-zA-Z_:][\w:]*)(?:\{.*\})?\s+\S+(?:\s+-?\d+)?$/;
const SUFFIXED = /^(.*)_(bucket|sum|count)$/;

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const declaredTwice: string[] = [];
  const samples = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      if (types.has(type[1]!)) declaredTwice.push(type[1]!);
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a Prometheus text line: ${line.slice(0, 200)}`);
    samples.add(sample[1]!);
  }
  const familyOf = (name: string): string | undefined => {
    if (types.has(name)) return name;
    const [, base, suffix] = SUFFIXED.exec(name) ?? [];
    const kind = base ? types.get(base) : undefined;
    if (kind === 'histogram' || (kind === 'summary' && suffix !== 'bucket')) return base;
    return undefined;
  };
  const undeclared = [...samples].filter((name) => familyOf(name) === undefined);
  return { types, declaredTwice, samples, undeclared };
}

/** The names that no exposition has a series of. */
export function missingNames(names: Iterable<string>, expositions: Exposition[]): string[] {
  return [...new Set(names)].filter((name) => !expositions.some((e) => e.samples.has(name))).sort();
}

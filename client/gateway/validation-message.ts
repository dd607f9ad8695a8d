/**
 * A refused request's 400 in words a person acts on: the field, and what it
 * accepts, said once: `executorType must be one of worktree, local, ssh`, not the schema
 * validator's "must be equal to constant" per branch of a union; an unknown field named with the
 * nearest known one; a body that is not JSON with where it broke. Nothing of the request is
 * quoted but a field name the request gave (only when it is a plain identifier).
 */

/** The parts of an Ajv error (Fastify's validator, `verbose` on) this reads. */
export interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: { properties?: Record<string, unknown>; description?: string; const?: unknown };
}

const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/** `/repositories/0/repositoryId` → `repositories[0].repositoryId`; a part that is not a plain name is `…`. */
function fieldName(instancePath: string, context: string | undefined): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (parts.length === 0)
    return context === 'querystring' ? 'the query' : context === 'params' ? 'the path' : 'the body';
  return parts
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : PLAIN_NAME.test(part) ? (i === 0 ? part : `.${part}`) : '.…'))
    .join('');
}

/** The edit distance of two short names (Levenshtein), for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

/** The known field a mistyped one most likely meant: a prefix either way, or within a third of its length. */
function nearest(name: string, known: string[]): string | null {
  const lower = name.toLowerCase();
  let best: { field: string; d: number } | null = null;
  for (const field of known) {
    const f = field.toLowerCase();
    const d = f.startsWith(lower) || lower.startsWith(f) ? 0 : distance(lower, f);
    if (d <= Math.max(2, Math.floor(field.length / 3)) && (!best || d < best.d)) best = { field, d };
  }
  return best?.field ?? null;
}

/** The names of the object at `instancePath` in `data` that are plain identifiers (none where there is no object). */
function namesAt(data: unknown, instancePath: string): string[] {
  let at: unknown = data;
  for (const part of instancePath.split('/').filter(Boolean)) {
    if (at === null || typeof at !== 'object') return [];
    at = (at as Record<string, unknown>)[part];
  }
  return at !== null && typeof at === 'object' && !Array.isArray(at)
    ? Object.keys(at).filter((k) => PLAIN_NAME.test(k))
    : [];
}

function describe(field: string, errors: SchemaError[], data: unknown): string {
  const allowed = errors.filter((e) => e.keyword === 'const').map((e) => e.params.allowedValue);
  if (allowed.length > 0)
    return field === 'executorType'
      ? `executorType must be one of ${allowed.map(String).join(', ')}: the executors this service runs (no other is available here)`
      : `${field} must be one of ${allowed.map(String).join(', ')}`;
  const e = errors.find((x) => x.keyword !== 'anyOf') ?? errors[0]!;
  const p = e.params;
  switch (e.keyword) {
    case 'required': {
      const missing = String(p.missingProperty);
      const required = `${field === 'the body' || field === 'the query' ? '' : `${field}.`}${missing} is required`;
      // A field the request gave that the schema does not know, and that is near the missing one: named.
      const known = Object.keys(e.parentSchema?.properties ?? {});
      const given = namesAt(data, e.instancePath).filter((name) => !known.includes(name));
      const typo = given.find((name) => nearest(name, [missing]) === missing);
      return typo ? `${required}; did you mean ${missing} where the request says ${typo}?` : required;
    }
    case 'additionalProperties': {
      const extra = String(p.additionalProperty);
      if (!PLAIN_NAME.test(extra)) return `${field} has a field it does not take`;
      const known = Object.keys(e.parentSchema?.properties ?? {});
      const guess = nearest(extra, known);
      return `${extra} is not a field of ${field === 'the body' ? 'this request' : field}${guess ? `; did you mean ${guess}?` : ''}`;
    }
    case 'enum':
      return `${field} must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'type':
      return `${field} must be ${/^[aeiou]/.test(String(p.type)) ? 'an' : 'a'} ${String(p.type)}`;
    case 'minLength':
      return `${field} must have at least ${String(p.limit)} character${p.limit === 1 ? '' : 's'}`;
    case 'maxLength':
      return `${field} must have at most ${String(p.limit)} characters`;
    case 'minItems':
      return `${field} must have at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `${field} must have at most ${String(p.limit)} items`;
    case 'minimum':
    case 'maximum':
      return `${field} must be ${e.keyword === 'minimum' ? 'at least' : 'at most'} ${String(p.limit)}`;
    case 'pattern':
    case 'format':
      return `${field} is not in the accepted form${e.parentSchema?.description ? ` (${e.parentSchema.description})` : ''}`;
    default:
      return `${field} ${e.message ?? 'is not accepted'}`;
  }
}

/** One sentence per field, each said once, in the order the validator met them. */
export function validationMessage(errors: SchemaError[], context: string | undefined, data?: unknown): string {
  const byField = new Map<string, SchemaError[]>();
  for (const e of errors) {
    const field = fieldName(e.instancePath, context);
    byField.set(field, [...(byField.get(field) ?? []), e]);
  }
  const text = [...byField].map(([field, errs]) => describe(field, errs, data)).join('; ');
  return text.endsWith('?') ? text : `${text}.`;
}

/** Where a body that is not JSON broke, from the parser's own message (a position, never the text). */
export function malformedJsonMessage(parserMessage: string): string {
  const at = /position (\d+)/.exec(parserMessage);
  if (at) return `The body is not valid JSON: it breaks at character ${Number(at[1]) + 1}.`;
  if (/end of (JSON )?input/i.test(parserMessage)) return 'The body is not valid JSON: it ends too early.';
  // Node 20 names the token instead of its place; only JSON's own punctuation is repeated back.
  const token = /^Unexpected token '([{}[\],:"])'/.exec(parserMessage);
  if (token) return `The body is not valid JSON: a '${token[1]}' where a value or a name belongs.`;
  return 'The body is not valid JSON.';
}

/** Text a request carries that PostgreSQL cannot store as it was sent: refused before any route reads it. */

/** A UTF-16 surrogate without its other half: not a character, and written as UTF-8 it silently becomes U+FFFD. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Whether any string in a request (keys included) is text the service cannot keep as given: a
 * NUL, which PostgreSQL refuses in text and an argv cannot carry, or a lone surrogate. Walked
 * without recursion: a parsed body may nest as deep as its size allows.
 */
export function hasUnstorableText(values: unknown[]): boolean {
  const pending = [...values];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (value.includes('\u0000') || LONE_SURROGATE.test(value)) return true;
    } else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) pending.push(key, inner);
    }
  }
  return false;
}

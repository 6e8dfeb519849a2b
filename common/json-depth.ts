/**
 * How deep a parsed JSON value nests. Request bodies are refused past a bound:
 * everything that walks a body (validation, the idempotency fingerprint) recurses,
 * and a body of 64 KiB can nest tens of thousands of levels deep.
 */

/** The deepest nesting a request body may have; the top-level object is level 1. */
export const MAX_JSON_DEPTH = 32;

/** True when `value` nests objects or arrays deeper than `max` levels. Iterative: safe at any depth. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (current === null || typeof current !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(current)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

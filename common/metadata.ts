/**
 * Metadata keys may be any characters but NUL: `.`, `$` and `__proto__` included.
 * MongoDB and its compatible servers refuse some of those as field names, so metadata is stored
 * as an array of pairs and turned back into an object only when presented.
 */
export type MetadataPairs = Array<{ k: string; v: string }>;

export function toPairs(metadata: Record<string, string>): MetadataPairs {
  return Object.keys(metadata).map((k) => ({ k, v: metadata[k] as string }));
}

/** A null-prototype object, so a `__proto__` key is an ordinary own property. */
export function fromPairs(pairs: MetadataPairs): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const { k, v } of pairs) out[k] = v;
  return out;
}

/** At most this many keys, after any merge. */
export const METADATA_MAX_KEYS = 50;

/** Stripe's metadata merge: keys given replace, a key set to "" is removed, others stay. */
export function mergeMetadata(current: MetadataPairs, changes: MetadataPairs): MetadataPairs {
  const merged = new Map(current.map((p) => [p.k, p.v] as const));
  for (const { k, v } of changes) {
    if (v === '') merged.delete(k);
    else merged.set(k, v);
  }
  return [...merged].map(([k, v]) => ({ k, v }));
}

/** The refusal of a merge that would pass the key limit (each request alone may be within it). */
export function mergedMetadataTooLarge(keys: number, what: string): { code: 'metadata_invalid'; message: string; param: string } {
  return {
    code: 'metadata_invalid',
    message: `Invalid metadata: merged with the ${what}'s metadata it would have ${keys} keys, and at most ${METADATA_MAX_KEYS} are allowed. Set a key to "" to remove it.`,
    param: 'metadata',
  };
}

/**
 * Metadata keys may be any characters but NUL: `.`, `$` and `__proto__` included.
 * MongoDB and FerretDB refuse some of those as field names, so metadata is stored
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

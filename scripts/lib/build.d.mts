// Types of build.mjs for the TypeScript tests and benchmarks (the part they use).

/** The api and worker as `node` runs them, relative to the project: one bundled file each. */
export const BUNDLES: { readonly api: string; readonly worker: string };

/** A SHA-256 of every file the build reads under `root` (the project by default). */
export function sourceFingerprint(root?: string): string;

/** True when `root`'s dist/ holds a complete build of exactly these sources. */
export function buildIsCurrent(root?: string, fingerprint?: string): boolean;

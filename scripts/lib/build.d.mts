// Types of build.mjs for the TypeScript tests and benchmarks (the part they use).

/** The api and worker as `node` runs them, relative to the project: one bundled file each. */
export const BUNDLES: { readonly api: string; readonly worker: string };

// Types of throwaway-stack.mjs for the TypeScript tests.

/** Which store a throw-away stack's command gets: a MONGODB_URL already set, else a FerretDB it starts. */
export function storeChoice(env: Record<string, string | undefined>): { startFerretDB: boolean; mongoUrl: string | null };

/** Runs `node <args>` on throw-away servers, then exits with its code. */
export function runOnThrowawayStack(options: { name: string; tempPrefix: string; args: string[] }): Promise<never>;

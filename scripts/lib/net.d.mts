// Types of net.mjs for the TypeScript tests.

/**
 * A free TCP port on 127.0.0.1 (bound to port 0, then released). Another
 * process may take it before the caller binds it: startRedis and
 * startFerretDB then try another one.
 */
export function freePort(): Promise<number>;

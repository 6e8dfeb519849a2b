// Types of binaries.mjs for the TypeScript tests (the part they use).

/** The sqlite3 shell (installed as a Debian package when root and missing), or null. */
export function findSqlite3(): string | null;

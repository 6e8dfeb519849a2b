// Types of ferretdb-indexes.mjs for the TypeScript tests.

/** The suffix of the index's name: `<table>_id_path`. */
export const ID_PATH_INDEX_SUFFIX: string;

/** Adds the index to every table of one FerretDB database file that lacks it; resolves to those tables. */
export function indexDatabaseFile(file: string, options?: { bin?: string | null }): Promise<string[]>;

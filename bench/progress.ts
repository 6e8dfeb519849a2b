/** Prints one line of progress on stderr, stamped with the time of day; stdout is kept for the report. */
export function progress(message: string): void {
  process.stderr.write(`[bench] ${new Date().toISOString().slice(11, 19)} ${message}\n`);
}

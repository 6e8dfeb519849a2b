// Progress of the stack scripts goes to stderr, so that stdout stays the
// caller's (`.ci/run` reads the FerretDB path that findFerretDB() prints).

/** Writes one `[stack]` line to stderr. */
export function log(message) {
  process.stderr.write(`[stack] ${message}\n`);
}

import fs from 'node:fs';

/** The parsed content of a JSON file, or null when it is missing or not JSON. */
export function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

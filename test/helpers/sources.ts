// The product's TypeScript sources (api/, worker/, common/), read from the checkout, for
// tests that hold a rule about the code itself (one home for a message, a layer order).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** Every `.ts` file under `dirs` (relative to the checkout), as a repo-relative path with `/`. */
export function sourceFiles(dirs: readonly string[] = ['api', 'worker', 'common']): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts')) out.push(rel);
    }
  };
  for (const dir of dirs) walk(dir);
  return out.sort();
}

export const readSource = (file: string): string => fs.readFileSync(path.join(repoRoot, file), 'utf8');

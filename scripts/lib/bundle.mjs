// One file per process: the compiled api and worker (dist/api/main.js,
// dist/worker/main.js), each bundled with its dependencies by esbuild into
// dist/bundle/. A process then starts from one file instead of resolving and loading
// hundreds of modules: idle, a worker takes 0.54 CPU s to start instead of 1.15, an
// api 0.9 instead of 1.2 (docs/decisions/0009-bundled-processes.md). Under load, where a restarted
// process gets a small share of the CPU, that is what brings it back sooner.
//
// The bundles stay inside the project: what the code resolves at run time
// (`require.resolve` of the dashboard's assets and of the reference page's script)
// is still found in node_modules.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

// The project directory; computed here, so that the Docker build needs this file and
// scripts/bundle.mjs only.
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Bundles dist/api/main.js and dist/worker/main.js (run after tsc), and the portal's browser script. */
export async function bundleEntryPoints() {
  await build({
    absWorkingDir: ROOT,
    entryPoints: [
      { in: 'dist/api/main.js', out: 'api' },
      { in: 'dist/worker/main.js', out: 'worker' },
    ],
    outdir: path.join(ROOT, 'dist', 'bundle'),
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // The CommonJS dependencies call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
    logLevel: 'error',
  });
  // The merchant portal's browser script (api/portal/browser/, type-checked by its own
  // tsconfig in `npm run build`): one small file the api serves at /portal/assets/portal.js.
  await build({
    absWorkingDir: ROOT,
    entryPoints: ['api/portal/browser/portal.ts'],
    outfile: path.join(ROOT, 'dist', 'bundle', 'portal.js'),
    bundle: true,
    minify: true,
    platform: 'browser',
    target: ['chrome120', 'firefox120'],
    format: 'iife',
    logLevel: 'error',
  });
}

// npm run build, after tsc: one file per process (scripts/lib/bundle.mjs).

import { bundleEntryPoints } from './lib/bundle.mjs';

await bundleEntryPoints();

// Local stack bootstrapping: dependencies, build, and throw-away or persistent
// Redis + FerretDB servers for `npm start` and `npm test`. The code lives in
// scripts/lib/, one module per concern; this is the API that scripts/*.mjs
// and `.ci/run` use.
//
// Plain Node ESM with builtins only: it must work before `npm ci` has ever run.

export { FERRETDB_MODULE, FERRETDB_VERSION, findFerretDB, findRedisServer, which } from './lib/binaries.mjs';
export { BUNDLES, ROOT, ensureBuild, ensureNodeModules } from './lib/build.mjs';
export { freePort } from './lib/net.mjs';
export { clearPidFile, reapStale, reapStaleTempStacks, recordChild } from './lib/pid-files.mjs';
export { startFerretDB, startRedis, startStack } from './lib/servers.mjs';
export { runOnThrowawayStack } from './lib/throwaway-stack.mjs';

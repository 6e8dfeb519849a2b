// ESLint flat config: typescript-eslint's recommended rules for the
// TypeScript sources, @eslint/js recommended for the plain Node scripts.

import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// The Node.js globals the scripts use (kept by hand: no `globals` package).
const nodeGlobals = Object.fromEntries(
  [
    'AbortController',
    'AbortSignal',
    'Buffer',
    'URL',
    'URLSearchParams',
    'TextDecoder',
    'TextEncoder',
    'clearImmediate',
    'clearInterval',
    'clearTimeout',
    'console',
    'fetch',
    'performance',
    'process',
    'queueMicrotask',
    'setImmediate',
    'setInterval',
    'setTimeout',
    'structuredClone',
  ].map((name) => [name, 'readonly']),
);

/**
 * The architecture's import rules. api and worker never import each other, common
 * imports neither, and inside api the arrows run one way: routes → handlers and
 * queries → common, middleware → common, routes → openapi → schemas. Flat config does not merge one rule across
 * blocks (the last match wins), so each block lists every pattern that applies to it.
 */
const up = (dir) => ({ regex: `^(\\.\\./)+${dir}/`, message: `this layer must not import from ${dir}/` });
// The api verifies operators' callbacks with each operator's own callbacks module
// (worker/operators/<operator>/callbacks.ts), which imports only common/.
const upToWorker = { regex: '^(\\.\\./)+worker/(?!operators/[a-z-]+/callbacks\\.js$)', message: 'this layer must not import from worker/ (but an operator\'s callbacks module)' };
const callbacksOnlyCommon = { regex: '^\\.\\.?/(?!\\.\\./\\.\\./common/)', message: 'an operator\'s callbacks module imports only common/: the api uses it' };
const sibling = (dir) => ({ regex: `^\\.\\./${dir}/`, message: `this folder must not import from api/${dir}/` });
const child = (dir) => ({ regex: `^\\./${dir}/`, message: `this module must not import from api/${dir}/` });
const boundaries = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });
const apiLayers = [
  { files: ['api/middleware/**/*.ts'], patterns: ['routes', 'handlers', 'queries', 'idempotency'].map(sibling) },
  { files: ['api/handlers/**/*.ts'], patterns: ['routes'].map(sibling) },
  { files: ['api/queries/**/*.ts', 'api/schemas/**/*.ts'], patterns: ['routes', 'handlers', 'middleware', 'idempotency'].map(sibling) },
  { files: ['api/idempotency/**/*.ts'], patterns: ['routes', 'handlers', 'middleware', 'queries'].map(sibling) },
  // The OpenAPI document is built from schemas and common, never from what serves it.
  { files: ['api/openapi/**/*.ts'], patterns: ['routes', 'handlers', 'middleware', 'queries', 'idempotency'].map(sibling) },
  { files: ['api/context.ts', 'api/respond.ts', 'api/result-waiter.ts', 'api/admission.ts'], patterns: ['routes', 'handlers', 'queries', 'middleware', 'idempotency'].map(child) },
];

/**
 * Inside worker/ the arrows run one way too, top to bottom: main.ts → the composition
 * (deps.ts, routes.ts, schedules.ts, metrics.ts) → processors/ → refunds/ → lifecycle/
 * → balance/ → webhooks/ and operators/ (which never import each other) → the worker's own
 * infrastructure at its root (record-lock.ts, write-gate.ts, group-commit.ts,
 * fenced-updates.ts, event-identity.ts, idempotency-records.ts, sweep-walk.ts) →
 * common/. Each block forbids the rooms above it; test/worker/layers.test.ts holds
 * the order and that no file of worker/ imports itself round a circle.
 */
const COMPOSITION = ['main', 'deps', 'routes', 'schedules', 'metrics'];
const WORKER_ROOMS = ['processors', 'reconcile', 'payouts', 'refunds', 'lifecycle', 'balance', 'webhooks', 'operators'];
const upToRoom = (room) => ({ regex: `^(\\.\\./)+${room}/`, message: `this layer of worker/ must not import from worker/${room}/ (a layer above it)` });
const upToComposition = { regex: `^(\\.\\./)+(${COMPOSITION.join('|')})\\.js$`, message: 'only main.ts and the composition import the composition of worker/' };
const rootUp = [
  ...WORKER_ROOMS.map((room) => ({ regex: `^\\./${room}/`, message: `worker's infrastructure must not import from worker/${room}/ (a layer above it)` })),
  { regex: `^\\./(${COMPOSITION.join('|')})\\.js$`, message: "worker's infrastructure must not import the composition of worker/" },
];
const workerLayers = [
  // reconcile/ and payouts/ are jobs beside processors/, and use its mutation and lifecycle steps.
  { files: ['worker/processors/**/*.ts'], above: ['payouts'] },
  { files: ['worker/reconcile/**/*.ts'], above: ['payouts'] },
  { files: ['worker/payouts/**/*.ts'], above: ['reconcile'] },
  { files: ['worker/refunds/**/*.ts'], above: ['processors', 'reconcile', 'payouts'] },
  { files: ['worker/lifecycle/**/*.ts'], above: ['processors', 'reconcile', 'payouts', 'refunds'] },
  // balance/: the ledger, below every room that moves money.
  { files: ['worker/balance/**/*.ts'], above: ['processors', 'reconcile', 'payouts', 'refunds', 'lifecycle'] },
  { files: ['worker/webhooks/**/*.ts'], above: ['processors', 'reconcile', 'payouts', 'refunds', 'lifecycle', 'balance', 'operators'] },
  { files: ['worker/operators/**/*.ts'], above: ['processors', 'reconcile', 'payouts', 'refunds', 'lifecycle', 'balance', 'webhooks'] },
].map(({ files, above }) => ({ files, patterns: [up('api'), upToComposition, ...above.map(upToRoom)] }));

const unusedVars = {
  args: 'after-used',
  argsIgnorePattern: '^_',
  varsIgnorePattern: '^_',
  caughtErrorsIgnorePattern: '^_',
};

export default defineConfig([
  {
    ignores: ['dist/', 'node_modules/', '.data/', 'bench/results/', '.tmp/', 'test/artifacts/'],
  },
  {
    files: ['**/*.{ts,mts}'],
    extends: [tseslint.configs.recommended],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', unusedVars],
    },
  },
  { files: ['common/**/*.ts'], rules: boundaries([up('api'), up('worker')]) },
  { files: ['worker/**/*.ts'], rules: boundaries([up('api')]) },
  ...workerLayers.map(({ files, patterns }) => ({ files, rules: boundaries(patterns) })),
  // The infrastructure at worker/'s root: every .ts there but main.ts and the composition.
  { files: ['worker/*.ts'], ignores: COMPOSITION.map((name) => `worker/${name}.ts`), rules: boundaries([up('api'), ...rootUp]) },
  { files: ['api/**/*.ts'], rules: boundaries([upToWorker]) },
  ...apiLayers.map(({ files, patterns }) => ({ files, rules: boundaries([up('worker'), ...patterns]) })),
  { files: ['worker/operators/*/callbacks.ts'], rules: boundaries([up('api'), callbacksOnlyCommon]) },
  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [js.configs.recommended],
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      globals: nodeGlobals,
    },
    rules: {
      'no-unused-vars': ['error', unusedVars],
    },
  },
]);

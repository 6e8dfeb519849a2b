/**
 * worker/'s import graph keeps its shape: no file of worker/ imports itself round a
 * circle, and the lint (eslint.config.js, `workerLayers`) refuses an import that runs
 * back up a layer: main.ts → the composition → processors/ → refunds/ → lifecycle/ →
 * webhooks/ and operators/ → worker/'s own infrastructure → common/.
 */
import path from 'node:path';
import test from 'ava';
import { ESLint } from 'eslint';
import { readSource, repoRoot, sourceFiles } from '../helpers/sources.js';

/** The files of worker/ each file of worker/ imports (static imports and re-exports, types included). */
function workerGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(['worker'])) {
    const targets = [...readSource(file).matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/gms)]
      .map((m) => path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1] as string)).replace(/\.js$/, '.ts'))
      .filter((target) => target.startsWith('worker/'));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Every circle of `graph`, each once, as the files round it. */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(stack.slice(stack.indexOf(next)));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

test('no file of worker/ imports itself round a circle', (t) => {
  const graph = workerGraph();
  t.true(graph.size > 50, 'the graph was read');
  t.true(graph.get('worker/processors/dispatch-event.ts')?.includes('worker/webhooks/first-attempt.ts'), 'imports are found');
  t.deepEqual(circles(graph), []);
});

test('the lint refuses an import that runs back up a layer of worker/, and allows one that runs down', async (t) => {
  const eslint = new ESLint({ cwd: repoRoot });
  const refusals = async (file: string, from: string) => {
    const [result] = await eslint.lintText(`import { x } from '${from}';\nexport const y = x;\n`, { filePath: path.join(repoRoot, file) });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').length;
  };
  const up: Array<[file: string, from: string]> = [
    ['worker/webhooks/first-attempt.ts', '../processors/dispatch-event.js'],
    ['worker/lifecycle/transition.ts', '../processors/mutation.js'],
    ['worker/group-commit.ts', './lifecycle/write-gate.js'],
    ['worker/fenced-updates.ts', './lifecycle/transition.js'],
    ['worker/refunds/ledger.ts', '../processors/refunds.js'],
    ['worker/operators/mpesa/connector.ts', '../../webhooks/outbox.js'],
    ['worker/webhooks/outbox.ts', '../operators/registry.js'],
    ['worker/processors/refunds.ts', '../deps.js'],
  ];
  for (const [file, from] of up) t.is(await refusals(file, from), 1, `${file} → ${from}`);
  const down: Array<[file: string, from: string]> = [
    ['worker/processors/refunds.ts', '../refunds/ledger.js'],
    ['worker/refunds/ledger.ts', '../lifecycle/transition.js'],
    ['worker/lifecycle/transition.ts', '../webhooks/outbox.js'],
    ['worker/webhooks/deliver.ts', '../record-lock.js'],
    ['worker/deps.ts', './processors/refunds.js'],
  ];
  for (const [file, from] of down) t.is(await refusals(file, from), 0, `${file} → ${from}`);
});

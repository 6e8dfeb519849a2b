/**
 * The sweepers' walk (worker/sweep-walk.ts), in memory: the order of the visits
 * (classes in order, projects taking turns, each project's items in their order), the
 * budget, and the cursors that carry a pass's walk over to the next.
 */
import test from 'ava';
import fc from 'fast-check';
import { afterKey, inTurn, walkFair, type WalkClass, type WalkKey, type WalkState, type WalkStore } from '../../worker/sweep-walk.js';

interface Item {
  project: string;
  due: number;
  id: string;
}

function compare(a: WalkKey, b: WalkKey): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const [x, y] = [a[i]!, b[i]!];
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
}

/** A class over `items`, in the order (due, id), as a store with an index would serve it; visits and pages are logged. */
function memoryClass(name: string, items: Item[], log: string[], pages: Array<{ project: string; limit: number; after: WalkKey | null }> = [], fail?: string) {
  const keyOf = (item: Item): WalkKey => [item.due, item.id];
  const cls: WalkClass<Item> = {
    name,
    scopes: async () => items.map((item) => item.project),
    page: async (project, after, limit) => {
      pages.push({ project, limit, after });
      return items
        .filter((item) => item.project === project && (!after || compare(keyOf(item), after) > 0))
        .sort((a, b) => compare(keyOf(a), keyOf(b)))
        .slice(0, limit);
    },
    keyOf,
    visit: async (item) => {
      log.push(`${name}:${item.id}`);
      if (item.id === fail) throw new Error(`cannot visit ${item.id}`);
    },
  };
  return cls as WalkClass<unknown>;
}

function memoryStore(): WalkStore & { state: WalkState } {
  const store = {
    state: {} as WalkState,
    load: async () => structuredClone(store.state),
    save: async (state: WalkState) => {
      store.state = structuredClone(state);
    },
  };
  return store;
}

/** A clock that moves one millisecond per visit: a budget of n ms is n visits. */
function visitClock(log: string[]): () => number {
  return () => log.length;
}

function many(project: string, n: number, due = 0): Item[] {
  return Array.from({ length: n }, (_, i) => ({ project, due, id: `${project}${String(i).padStart(5, '0')}` }));
}

test('a project with one item waiting has it visited in the first round, whatever another has queued', async (t) => {
  const log: string[] = [];
  const items = [...many('a', 1100), { project: 'b', due: 0, id: 'b-stranded' }];
  const result = await walkFair([memoryClass('test', items, log)], memoryStore(), { budgetMs: 3, clock: visitClock(log) });
  t.deepEqual(log, ['test:a00000', 'test:b-stranded', 'test:a00001']);
  t.deepEqual(result, { visited: 3, complete: false });
});

test('live before test, and due before the rest: a class is walked to its end before the next begins', async (t) => {
  const log: string[] = [];
  const classes = [
    memoryClass('live:due', [{ project: 'p', due: 1, id: 'l1' }], log),
    memoryClass('live:flight', [{ project: 'p', due: 5, id: 'l2' }, { project: 'q', due: 1, id: 'l3' }], log),
    memoryClass('test:flight', many('a', 3), log),
  ];
  const result = await walkFair(classes, memoryStore(), { budgetMs: 100, clock: visitClock(log) });
  t.deepEqual(log, ['live:due:l1', 'live:flight:l2', 'live:flight:l3', 'test:flight:a00000', 'test:flight:a00001', 'test:flight:a00002']);
  t.deepEqual(result, { visited: 6, complete: true });
});

test("each project's items in the class's order: soonest due first, then by id", async (t) => {
  const log: string[] = [];
  const items = [
    { project: 'p', due: 30, id: 'x' },
    { project: 'p', due: 10, id: 'z' },
    { project: 'p', due: 10, id: 'y' },
    { project: 'p', due: 20, id: 'a' },
  ];
  await walkFair([memoryClass('c', items, log)], memoryStore(), { budgetMs: 100, clock: visitClock(log) });
  t.deepEqual(log, ['c:y', 'c:z', 'c:a', 'c:x']);
});

test('a pass out of budget saves each project\'s cursor and whose turn it was; the next resumes there, and a class walked to its end starts again', async (t) => {
  const log: string[] = [];
  const store = memoryStore();
  const cls = memoryClass('test', [...many('a', 5), ...many('b', 2), ...many('c', 1)], log);
  const clock = visitClock(log);

  await walkFair([cls], store, { budgetMs: 4, clock });
  t.deepEqual(log, ['test:a00000', 'test:b00000', 'test:c00000', 'test:a00001']);
  t.deepEqual(store.state, { test: { turn: 'b', after: { a: [0, 'a00001'], b: [0, 'b00000'] } } }, 'c was walked to its end: no cursor');

  log.length = 0;
  const second = await walkFair([cls], store, { budgetMs: 3, clock });
  // b's turn first; c is walked again from its beginning (its one item).
  t.deepEqual(log, ['test:b00001', 'test:c00000', 'test:a00002']);
  t.false(second.complete);

  t.deepEqual(store.state, { test: { turn: 'a', after: { a: [0, 'a00002'] } } }, 'b and c were walked to their ends');

  log.length = 0;
  const third = await walkFair([cls], store, { budgetMs: 100, clock });
  // a's turn first, from its cursor; b and c again from their beginnings.
  t.deepEqual(log, ['test:a00003', 'test:b00000', 'test:c00000', 'test:a00004', 'test:b00001']);
  t.true(third.complete);
  t.deepEqual(store.state, {}, 'nothing left to resume');
});

test('the classes before the one that ran out are walked again first; the later ones keep their cursors', async (t) => {
  const log: string[] = [];
  const store = memoryStore();
  const classes = [memoryClass('live', many('l', 1), log), memoryClass('test', many('t', 4), log)];
  const clock = visitClock(log);
  await walkFair(classes, store, { budgetMs: 3, clock });
  t.deepEqual(log, ['live:l00000', 'test:t00000', 'test:t00001']);
  log.length = 0;
  await walkFair(classes, store, { budgetMs: 3, clock });
  t.deepEqual(log, ['live:l00000', 'test:t00002', 'test:t00003']);
});

test('a later class moves on in every pass, even when the first has more than a pass can do', async (t) => {
  const log: string[] = [];
  const store = memoryStore();
  const classes = [memoryClass('live', many('l', 100), log), memoryClass('test', many('t', 3), log)];
  const clock = visitClock(log);
  for (let pass = 0; pass < 3; pass++) {
    log.length = 0;
    // A reserve of an eighth of the budget for the second class: 7 visits, then 1.
    const result = await walkFair(classes, store, { budgetMs: 8, clock });
    t.deepEqual(log, [...many('l', 100).slice(7 * pass, 7 * pass + 7).map((item) => `live:${item.id}`), `test:t0000${pass}`]);
    t.false(result.complete);
  }
});

test('pages grow from the first size to the largest, each from the cursor', async (t) => {
  const log: string[] = [];
  const pages: Array<{ project: string; limit: number; after: WalkKey | null }> = [];
  await walkFair([memoryClass('c', many('p', 40), log, pages)], memoryStore(), { budgetMs: 1000, clock: visitClock(log), firstPage: 4, maxPage: 16 });
  t.deepEqual(
    pages.map((p) => [p.limit, p.after?.[1] ?? null]),
    [
      [4, null],
      [8, 'p00003'],
      [16, 'p00011'],
      [16, 'p00027'],
    ],
    'the last page came back short: no more reads',
  );
  t.is(log.length, 40);
});

test('every pass visits one item at least, even with no budget', async (t) => {
  const log: string[] = [];
  const store = memoryStore();
  const cls = memoryClass('c', many('p', 3), log);
  for (let pass = 0; pass < 3; pass++) await walkFair([cls], store, { budgetMs: 0, clock: visitClock(log) });
  t.deepEqual(log, ['c:p00000', 'c:p00001', 'c:p00002']);
});

test('a visit that fails stops the pass and is thrown; the next pass goes on after it, not stuck on it', async (t) => {
  const log: string[] = [];
  const store = memoryStore();
  const cls = memoryClass('c', [...many('a', 3), ...many('b', 2)], log, [], 'a00001');
  await t.throwsAsync(walkFair([cls], store, { budgetMs: 100, clock: visitClock(log) }), { message: 'cannot visit a00001' });
  t.deepEqual(log, ['c:a00000', 'c:b00000', 'c:a00001']);
  log.length = 0;
  await walkFair([cls], store, { budgetMs: 100, clock: visitClock(log) });
  t.deepEqual(log, ['c:b00001', 'c:a00002']);
});

test('projects gone since the last pass are forgotten; a new one takes its turn in order', async (t) => {
  const log: string[] = [];
  const store = memoryStore();
  store.state = { c: { turn: 'm', after: { gone: [0, 'x'], z: [0, 'z00000'] } }, renamed: { turn: 'a' } };
  await walkFair([memoryClass('c', [...many('a', 1), ...many('n', 1), ...many('z', 2)], log)], store, { budgetMs: 100, clock: visitClock(log) });
  t.deepEqual(log, ['c:n00000', 'c:z00001', 'c:a00000']);
  t.deepEqual(store.state, {}, 'a class no sweeper walks any more is dropped too');
});

test('inTurn starts with the turn, or the first project after it, and wraps around', (t) => {
  t.deepEqual(inTurn(['a', 'b', 'c'], undefined), ['a', 'b', 'c']);
  t.deepEqual(inTurn(['a', 'b', 'c'], 'b'), ['b', 'c', 'a']);
  t.deepEqual(inTurn(['a', 'c'], 'b'), ['c', 'a']);
  t.deepEqual(inTurn(['a', 'c'], 'd'), ['a', 'c']);
});

test('afterKey: after (value, id) in the order (field, _id)', (t) => {
  t.deepEqual(afterKey('created', null), {});
  t.deepEqual(afterKey('created', [10, 're_1']), { $or: [{ created: { $gt: 10 } }, { created: 10, _id: { $gt: 're_1' } }] });
});

test('property: within a pass no project gets more than one visit over one whose walk goes on; with a budget of a round, every project is visited in the first pass; passes reach every item', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 25 }), async (sizes, budget) => {
      const items = sizes.flatMap((n, i) => many(`p${i}-`, n));
      const log: string[] = [];
      const store = memoryStore();
      const cls = memoryClass('c', items, log);
      const seen = new Set<string>();
      for (let pass = 0; seen.size < items.length; pass++) {
        // A project's walk gets a visit every round, and a round takes at most as many passes as there are projects.
        if (pass > Math.max(...sizes) * sizes.length + sizes.length) return false;
        log.length = 0;
        await walkFair([cls], store, { budgetMs: budget, clock: visitClock(log), firstPage: 4, maxPage: 8 });
        const counts = new Map(sizes.map((_, i) => [`p${i}-`, 0]));
        for (const line of log) {
          seen.add(line);
          const project = line.slice('c:'.length).replace(/\d{5}$/, '');
          counts.set(project, counts.get(project)! + 1);
        }
        const most = Math.max(...counts.values());
        for (const goingOn of Object.keys(store.state.c?.after ?? {})) if (most > counts.get(goingOn)! + 1) return false;
        if (pass === 0 && budget >= sizes.length && [...counts.values()].some((n) => n === 0)) return false;
      }
      return true;
    }),
    { numRuns: 300 },
  );
  t.pass();
});

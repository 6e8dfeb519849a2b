/**
 * The sweepers' walk (DESIGN section 20, "Recovery reaches everyone"). A sweeper's
 * work is a list of classes in priority order (live before test; within a mode, what
 * is due first); a class's work is split by scope (a project in that mode), and each
 * scope's work is read in the class's order, page by page from a cursor (the sort key
 * of the last item visited), until it is exhausted.
 *
 * Within a class the scopes take turns, one item each: a scope with one item waiting
 * has it visited in the first round, whatever another scope has queued. A pass has a
 * time budget; the first classes take most of it, and each later class keeps a
 * reserve of it, so every class moves on in every pass (`walkFair`). A class that runs
 * out of time keeps where it stopped (each scope's cursor, and whose turn it was), and
 * the next pass resumes it there. A class walked to its end starts from the beginning
 * next pass: the first classes are walked again first, because they matter more.
 *
 * No fixed batch: nothing any scope queues can keep another scope's work from being
 * visited. The cursors are kept in Redis for a day (a lost one only restarts its
 * walk from the beginning).
 */
import type { Redis } from 'ioredis';
import type { Collection, Document, Filter } from 'mongodb';

/** An item's place in its class's order: its sort key, last field `_id`. JSON-safe. */
export type WalkKey = ReadonlyArray<string | number>;

/** One class of a sweeper's work. */
export interface WalkClass<I> {
  /** Names the class in the kept cursors. */
  name: string;
  /** The projects with work of this class now. */
  scopes(): Promise<string[]>;
  /** Up to `limit` items of `project`'s work after `after` (from the start when null), in the class's order. */
  page(project: string, after: WalkKey | null, limit: number): Promise<I[]>;
  keyOf(item: I): WalkKey;
  visit(item: I): Promise<void>;
}

/** Where a class's walk stopped: whose turn comes first, and each unfinished scope's cursor. */
export interface ClassState {
  turn?: string;
  after?: Record<string, WalkKey>;
}

export type WalkState = Record<string, ClassState>;

export interface WalkStore {
  load(): Promise<WalkState>;
  save(state: WalkState): Promise<void>;
}

export interface WalkOptions {
  budgetMs: number;
  /** Monotonic milliseconds, for the budget (tests pass their own). */
  clock?: () => number;
  /** A scope's first page; each next page of it is twice as large, up to `maxPage`. */
  firstPage?: number;
  maxPage?: number;
}

export interface WalkResult {
  visited: number;
  /** Every class was walked to its end within the budget. */
  complete: boolean;
}

const FIRST_PAGE = 16;
const MAX_PAGE = 512;

interface Lane<I> {
  project: string;
  after: WalkKey | null;
  buffer: I[];
  next: number;
  ended: boolean;
  size: number;
}

/**
 * Walks `classes` from where `store` says the last pass stopped, for `budgetMs`, and
 * saves where this one stops.
 *
 * The classes go in order, each until it is walked to its end or until its own
 * deadline: the pass's, less a reserve for each class after it (a quarter of the
 * budget, shared among the classes), so the first classes (live, due) take most of a
 * pass and the last ones still move on in every pass. Each class with work gets one
 * visit at least, however slow the store.
 *
 * A visit that throws stops the pass: its item counts as visited (an item that always
 * fails must not stall the walk behind it), the state is saved, and the error is
 * thrown.
 */
export async function walkFair(classes: ReadonlyArray<WalkClass<unknown>>, store: WalkStore, options: WalkOptions): Promise<WalkResult> {
  const clock = options.clock ?? (() => performance.now());
  const firstPage = options.firstPage ?? FIRST_PAGE;
  const maxPage = options.maxPage ?? MAX_PAGE;
  const deadline = clock() + options.budgetMs;
  const reserve = options.budgetMs / (4 * classes.length);
  const saved = await store.load();
  const state: WalkState = {};
  for (const cls of classes) if (saved[cls.name]) state[cls.name] = saved[cls.name]!;
  let visited = 0;
  let complete = true;

  for (const [c, cls] of classes.entries()) {
    const classDeadline = Math.max(deadline - (classes.length - 1 - c) * reserve, Math.min(clock() + reserve, deadline));
    let visitedHere = 0;
    const spent = () => visitedHere > 0 && clock() >= classDeadline;
    const before = state[cls.name] ?? {};
    const lanes: Lane<unknown>[] = inTurn([...new Set(await cls.scopes())].sort(), before.turn).map((project) => ({
      project,
      after: before.after?.[project] ?? null,
      buffer: [],
      next: 0,
      ended: false,
      size: firstPage,
    }));
    const stop = (turn: string) => {
      const after: Record<string, WalkKey> = {};
      for (const lane of lanes) if (lane.after) after[lane.project] = lane.after;
      state[cls.name] = { turn, after };
    };
    let i = 0;
    while (lanes.length > 0) {
      if (i >= lanes.length) i = 0;
      const lane = lanes[i]!;
      if (spent()) {
        stop(lane.project);
        complete = false;
        break;
      }
      if (lane.next >= lane.buffer.length) {
        lane.buffer = lane.ended ? [] : await cls.page(lane.project, lane.after, lane.size);
        lane.next = 0;
        lane.ended = lane.buffer.length < lane.size;
        lane.size = Math.min(lane.size * 2, maxPage);
        if (lane.buffer.length === 0) {
          // Walked to its end: it starts from the beginning next time.
          lanes.splice(i, 1);
          continue;
        }
      }
      const item = lane.buffer[lane.next++];
      lane.after = cls.keyOf(item);
      visited++;
      visitedHere++;
      // Its last item: walked to its end.
      if (lane.ended && lane.next >= lane.buffer.length) lanes.splice(i, 1);
      else i++;
      try {
        await cls.visit(item);
      } catch (err) {
        if (lanes.length > 0) stop(lanes[i % lanes.length]!.project);
        else delete state[cls.name];
        await store.save(state).catch(() => undefined);
        throw err;
      }
    }
    // Walked to its end: it starts from the beginning next pass.
    if (lanes.length === 0) delete state[cls.name];
  }
  await store.save(state);
  return { visited, complete };
}

/** `projects` (sorted), starting with `turn`, or the first after it. */
export function inTurn(projects: string[], turn: string | undefined): string[] {
  if (turn === undefined) return projects;
  const at = projects.findIndex((project) => project >= turn);
  return at <= 0 ? projects : [...projects.slice(at), ...projects.slice(0, at)];
}

/**
 * The filter of the items after `after` in the order (`field`, `_id`), or (`_id`) when
 * `field` is null: index-shaped, an equality on `field` with a range on `_id`, or a
 * range on `field`.
 */
export function afterKey(field: string | null, after: WalkKey | null): Record<string, unknown> {
  if (!after) return {};
  if (field === null) return { _id: { $gt: after[0] } };
  const [value, id] = after;
  return { $or: [{ [field]: { $gt: value } }, { [field]: value, _id: { $gt: id } }] };
}

/** How a class finds its projects and reads a project's page. */
export type ClassSource<I> = Pick<WalkClass<I>, 'scopes' | 'page'>;

/** The order of walk keys: numbers by value, strings by code unit (as the store orders ASCII ids). */
export function compareKeys(a: WalkKey, b: WalkKey): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const [x, y] = [a[i]!, b[i]!];
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return a.length - b.length;
}

/** A class's filter, and its order: `field` then `_id`, or `_id` alone when `field` is null. */
export interface ClassQuery {
  filter: Filter<Document>;
  field: string | null;
}

/**
 * A store that serves filters from indexes (`queriesUseIndexes`, common/store-profile.ts):
 * the projects are a distinct of the class's filter, and each page a range of the
 * index that begins with the filter's fields, then `project`, then the order.
 */
export function indexedSource<T extends Document, I = T>(of: Collection<T>, query: ClassQuery, projection: Document): ClassSource<I> {
  const collection = of as unknown as Collection<Document>;
  const sort: Record<string, 1> = query.field === null ? { _id: 1 } : { [query.field]: 1, _id: 1 };
  return {
    scopes: () => collection.distinct('project', query.filter) as Promise<string[]>,
    page: (project, after, limit) =>
      collection
        .find({ ...query.filter, project, ...afterKey(query.field, after) }, { projection })
        .sort(sort)
        .limit(limit)
        .toArray() as Promise<I[]>,
  };
}

/**
 * A store that scans for every filter but a lone `_id` (the local stack's,
 * docs/storage.md): one query per pass, shared by the sweeper's classes, reads every
 * candidate once; the classes' projects and pages come from that read, in the same
 * order as `indexedSource`'s. A pass then costs the store one scan, not one per class
 * and per page.
 */
export class Snapshot<I> {
  private lanes: Promise<Map<string, Map<string, I[]>>> | null = null;

  constructor(
    private readonly read: () => Promise<I[]>,
    /** The item's class, or null when it is in none. */
    private readonly classOf: (item: I) => string | null,
    private readonly keyOf: (item: I) => WalkKey,
    private readonly projectOf: (item: I) => string,
  ) {}

  source(name: string): ClassSource<I> {
    return {
      scopes: async () => [...((await this.load()).get(name)?.keys() ?? [])],
      page: async (project, after, limit) => {
        const items = (await this.load()).get(name)?.get(project) ?? [];
        let [low, high] = [0, items.length];
        // The first item after `after`.
        while (after && low < high) {
          const mid = (low + high) >>> 1;
          if (compareKeys(this.keyOf(items[mid]!), after) > 0) high = mid;
          else low = mid + 1;
        }
        return items.slice(low, low + limit);
      },
    };
  }

  private load(): Promise<Map<string, Map<string, I[]>>> {
    this.lanes ??= this.read().then((items) => {
      const lanes = new Map<string, Map<string, I[]>>();
      for (const item of items) {
        const name = this.classOf(item);
        if (name === null) continue;
        const projects = lanes.get(name) ?? new Map<string, I[]>();
        lanes.set(name, projects);
        const project = this.projectOf(item);
        const list = projects.get(project) ?? [];
        projects.set(project, list);
        list.push(item);
      }
      for (const projects of lanes.values()) for (const list of projects.values()) list.sort((a, b) => compareKeys(this.keyOf(a), this.keyOf(b)));
      return lanes;
    });
    return this.lanes;
  }
}

const KEPT_S = 24 * 3600;

/** A sweeper's cursors, kept in Redis as one JSON value. */
export function redisWalkStore(redis: Redis, prefix: string, sweeper: string): WalkStore {
  const key = `${prefix}:sweep-walk:${sweeper}`;
  return {
    async load() {
      const json = await redis.get(key);
      if (!json) return {};
      try {
        const parsed = JSON.parse(json) as unknown;
        return parsed && typeof parsed === 'object' ? (parsed as WalkState) : {};
      } catch {
        return {};
      }
    },
    async save(state) {
      if (Object.keys(state).length === 0) await redis.del(key);
      else await redis.set(key, JSON.stringify(state), 'EX', KEPT_S);
    },
  };
}

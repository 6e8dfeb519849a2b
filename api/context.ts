import type { IncomingMessage } from 'node:http';
import type { ParameterizedContext } from 'koa';
import type Router from '@koa/router';
import type { Redis } from 'ioredis';
import type { ObjectWrites } from './object-writes.js';
import type { AdminFailures } from './admin-failures.js';
import type { ApiKeyCache } from '../common/api-keys.js';
import type { Config } from '../common/config.js';
import type { IdGenerator } from '../common/ids.js';
import type { Queues } from '../common/jobs.js';
import type { Logger } from '../common/logger.js';
import type { ApiKeyDoc } from '../common/documents.js';
import type { Mongo } from '../common/mongo.js';
import type { OperatorHealth } from '../common/operator-status.js';
import type { CreateAdmission } from './admission.js';
import type { ResultWaiter } from './result-waiter.js';
import type { BodyEncoding } from './schemas/fields.js';

/** Everything the api needs, built in main.ts (or by a test) and injected. */
export interface AppDeps {
  config: Config;
  /** Fail-fast command connection: a request answers 503 while Redis is down. */
  redis: Redis;
  /** Every queue of the service, typed from the job contract; the writes queue is used to enqueue. */
  queues: Queues;
  results: ResultWaiter;
  mongo: Mongo;
  keys: ApiKeyCache;
  logger: Logger;
  ids: IdGenerator;
  /** Epoch ms. */
  now: () => number;
  /**
   * False until the process is ready to take creates (its results subscription is
   * live and MongoDB answered): /readyz answers 503 and creates are refused. Default: always ready.
   */
  started?: () => boolean;
  /** Refuses creates the queue could not serve in time; absent: every create is admitted. */
  admission?: CreateAdmission;
  /** Writes in flight per object (api/object-writes.ts); absent in unit tests. */
  objectWrites?: ObjectWrites;
  /** Failed admin and dashboard sign-ins (api/admin-failures.ts); absent in unit tests. */
  adminFailures?: AdminFailures;
  /** Extra routers mounted before the 404 handler (dashboard, metrics). */
  extraRouters?: Router[];
  /**
   * /readyz's MongoDB check. Default: a ping through `mongo`'s pool, where under load it
   * waits behind every slow query; main.ts gives it a connection of its own.
   */
  pingMongo?: () => Promise<unknown>;
  /** Live mode: how each operator's recent calls went (`degraded`); default: no calls recorded. */
  operatorHealth?: OperatorHealth;
  /**
   * This process's own base URL once it listens (`http://127.0.0.1:PORT`): the
   * merchant portal calls `/v1` there (api/portal/v1-client.ts). Null before.
   */
  selfUrl?: () => string | null;
  /** Called once per request with its outcome (metrics). */
  onRequest?: (info: { method: string; route: string; status: number; durationMs: number }) => void;
}

export interface State {
  requestId: string;
  /** Route template, for logs and metrics. */
  route?: string;
  key?: ApiKeyDoc;
  body?: Record<string, unknown>;
  /** How `body` arrived: its checks coerce a form's strings by field type. */
  bodyEncoding?: BodyEncoding;
  /** The body as read, before parsing. */
  bodyText?: string;
}

export type Ctx = ParameterizedContext<State>;

/**
 * What the replay at the door (handlers/replay-from-memory.ts) did with a request it
 * then handed to Koa, so that the guards neither count it twice against the rate
 * limit nor read a body already read.
 */
export interface HandedOn {
  /** Counted against its key's rate limit; `over`: past the limit, the guard answers 429. */
  rate?: 'counted' | 'over';
  /** The body as read, or the contract's error reading it gave. */
  body?: { text: string } | { error: unknown };
}

const handedOn = new WeakMap<IncomingMessage, HandedOn>();

/** Records what was done with `req` before Koa saw it; null, for a caller's `return`. */
export function handOn(req: IncomingMessage, done: HandedOn): null {
  handedOn.set(req, done);
  return null;
}

export function handedOnOf(req: IncomingMessage): HandedOn | undefined {
  return handedOn.get(req);
}

/** The template of the route @koa/router matched (it sets it while routing), if any yet. */
export function matchedRoute(ctx: Ctx): string | undefined {
  const matched = (ctx as unknown as { _matchedRoute?: string | RegExp })._matchedRoute;
  return matched === undefined ? undefined : String(matched);
}

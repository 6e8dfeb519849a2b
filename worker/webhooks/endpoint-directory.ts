/**
 * The endpoints of each scope, kept in each worker process for the fan-out, which
 * otherwise reads them from MongoDB for every event it records (on the local stack's
 * store, a scan of every endpoint: docs/storage.md). A kept list is used only while
 * the scope's token in Redis is the one it was read under:
 *
 * - Every change of an endpoint (create, update, delete, rotation, a failure run
 *   noted or cleared, a disable) replaces the token before its write and again after
 *   it, before it is answered. A list read while the write was on its way was read
 *   under the first token and is dropped at the second, so once a change is answered
 *   no process fans out from a list without it. Like an uncached read, an event
 *   recorded while the change is on its way may see the scope either way.
 * - No token (a new scope, Redis lost its data): one is set, and the list read under it.
 * - Redis unreachable: the list is read from MongoDB, and not kept.
 * - The process's Redis connection closed (a restart, a rollback to an older token):
 *   every kept list is dropped (`clear`).
 * - A list is kept for `maxAgeMs` at most, whatever the token says.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { WebhookEndpointDoc } from '../../common/documents.js';
import type { Scope } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';

const MAX_AGE_MS = 60_000;
const MAX_SCOPES = 10_000;

export function endpointsTokenKey(prefix: string, scope: Scope): string {
  return `${prefix}:endpoints-token:${scope.livemode ? 'live' : 'test'}:${scope.project}`;
}

const freshToken = () => randomBytes(9).toString('base64url');

/** Before and after every write of an endpoint of `scope`. */
export async function endpointsChanged(redis: Redis, prefix: string, scope: Scope): Promise<void> {
  await redis.set(endpointsTokenKey(prefix, scope), freshToken());
}

/** `write` between two replacements of the scope's token: see the module's comment. */
export async function changingEndpoints<T>(redis: Redis, prefix: string, scope: Scope, write: () => Promise<T>): Promise<T> {
  await endpointsChanged(redis, prefix, scope);
  try {
    return await write();
  } finally {
    await endpointsChanged(redis, prefix, scope);
  }
}

export interface EndpointDirectoryDeps {
  redis: Redis;
  prefix: string;
  collections: Collections;
  now: () => number;
  maxAgeMs?: number;
}

interface Kept {
  token: string;
  endpoints: WebhookEndpointDoc[];
  readAt: number;
}

export class EndpointDirectory {
  private readonly kept = new Map<string, Kept>();
  /** Reads from MongoDB since the process started (the tests count them). */
  reads = 0;

  constructor(private readonly deps: EndpointDirectoryDeps) {}

  /** Every endpoint of the scope, whatever its status and events: the caller filters. */
  async endpointsOf(scope: Scope): Promise<WebhookEndpointDoc[]> {
    const name = `${scope.livemode ? 'live' : 'test'}\n${scope.project}`;
    const token = await this.tokenOf(scope);
    const kept = this.kept.get(name);
    const now = this.deps.now();
    if (token !== null && kept && kept.token === token && now - kept.readAt < (this.deps.maxAgeMs ?? MAX_AGE_MS)) return kept.endpoints;
    this.reads++;
    const endpoints = await this.deps.collections.webhookEndpoints.find({ project: scope.project, livemode: scope.livemode }).toArray();
    if (token === null) return endpoints;
    this.kept.delete(name);
    if (this.kept.size >= MAX_SCOPES) this.kept.delete(this.kept.keys().next().value as string);
    this.kept.set(name, { token, endpoints, readAt: now });
    return endpoints;
  }

  /** Forgets every kept list (the Redis connection closed: its tokens may have gone back). */
  clear(): void {
    this.kept.clear();
  }

  /** The scope's token (set now if there was none), or null when Redis does not answer. */
  private async tokenOf(scope: Scope): Promise<string | null> {
    const key = endpointsTokenKey(this.deps.prefix, scope);
    try {
      const token = await this.deps.redis.get(key);
      if (token !== null) return token;
      await this.deps.redis.set(key, freshToken(), 'NX');
      return await this.deps.redis.get(key);
    } catch {
      return null;
    }
  }
}

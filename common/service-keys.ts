/**
 * The service's own keys, kept in MongoDB (`service_keys`) and never in Redis: read
 * by every process that needs one, and made by the first (a racing process's insert
 * wins, and is read). One keyring per use: the confirm input's seal (input-seal.ts),
 * the results channel's seal (jobs.ts `ANSWER_KEY_ID`), the idempotency fingerprints
 * (idempotency.ts), the M-Pesa callback tokens.
 *
 * What a keyring promises (DESIGN.md section 20, security review L2):
 *
 * - A use has numbered versions: the first is the document `_id: <use>` (as older
 *   versions of the service made it), each rotation adds `_id: <use>:v<n>`
 *   (`rotateServiceKey`). Nothing is ever rewritten in place.
 * - A process reloads a keyring it uses every `reloadMs` (in the background: the keys
 *   it holds keep serving), and at once, at most once a second, when it is asked for
 *   a version newer than any it holds. So a rotation reaches every running process
 *   without a restart, and a text made under a key a process does not know yet still
 *   opens there.
 * - A new version is used to seal or sign only once it is `2 × reloadMs` old: by then
 *   every process has loaded it, and can check what it makes. Until then the previous
 *   version goes on. Every version the ring holds opens and verifies.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Collection, Filter } from 'mongodb';
import type { ServiceKeyDoc } from './documents.js';
import { isDuplicateKey } from './mongo.js';

/** How often a process reloads a keyring it uses, by default (`SERVICE_KEYS_RELOAD_MS`). */
export const DEFAULT_RELOAD_MS = 30_000;

/** Reloads asked for by a text naming an unknown version are this far apart at least. */
const MIN_RELOAD_GAP_MS = 1000;

/** How long a use waits for the read of keys held too long before it goes on with them. */
const STALE_WAIT_MS = 2000;

export interface KeyVersion {
  version: number;
  key: Buffer;
  /** Epoch ms, as the process that made it read its clock. */
  createdMs: number;
}

export interface KeyringOptions {
  /** How often the keys are read again (default 30 s); a new version is used once twice that old. */
  reloadMs?: number | undefined;
  /** Epoch ms (the keys' ages); tests move it. */
  now?: () => number;
}

interface Ring {
  /** Oldest first. */
  versions: KeyVersion[];
  /** performance.now() of the read. */
  loadedAt: number;
}

export class ServiceKeyring {
  private ring: Ring | null = null;
  private first: Promise<Ring> | null = null;
  private reloading: Promise<Ring> | null = null;
  private readonly reloadMs: number;
  private readonly now: () => number;

  constructor(
    private readonly keys: Collection<ServiceKeyDoc>,
    readonly use: string,
    options: KeyringOptions = {},
  ) {
    this.reloadMs = options.reloadMs ?? DEFAULT_RELOAD_MS;
    this.now = options.now ?? Date.now;
  }

  /** Loads the keys (the first key is made if there is none). Throws while MongoDB is away and nothing was loaded yet. */
  async ready(): Promise<void> {
    await this.loaded();
  }

  /** The version to seal or sign with: the newest that is `2 × reloadMs` old, else the oldest. */
  async current(): Promise<KeyVersion> {
    const { versions } = await this.loaded();
    const settled = this.now() - 2 * this.reloadMs;
    let chosen = versions[0] as KeyVersion;
    for (const v of versions) if (v.createdMs <= settled) chosen = v;
    return chosen;
  }

  /** Every version held, newest first: what verifies. */
  async all(): Promise<KeyVersion[]> {
    return [...(await this.loaded()).versions].reverse();
  }

  /**
   * Version `n`, read again from MongoDB when it is newer than every version held (a
   * rotation this process has not seen yet). Null for one that does not exist (or
   * was retired). Throws while MongoDB is away and a read was needed.
   */
  async version(n: number): Promise<KeyVersion | null> {
    let ring = await this.loaded();
    for (let reads = 0; ; reads++) {
      const found = ring.versions.find((v) => v.version === n);
      if (found) return found;
      const newest = ring.versions[ring.versions.length - 1] as KeyVersion;
      // An older version missing was retired: no read brings it back. Two reads: the
      // first may have started before the version was made.
      if (n < newest.version || reads === 2) return null;
      ring = await this.reload();
    }
  }

  /**
   * The keys held, read again in the background once `reloadMs` old. Older than twice
   * that (a process that was idle), they may lack a version other processes already
   * use: the read is waited for, a little while (held keys serve if it fails).
   */
  private async loaded(): Promise<Ring> {
    const ring = this.ring;
    if (ring) {
      const age = performance.now() - ring.loadedAt;
      if (age < this.reloadMs) return ring;
      const reading = this.reload().catch(() => ring);
      if (age < 2 * this.reloadMs) return ring;
      let timer: NodeJS.Timeout | undefined;
      const patience = new Promise<Ring>((resolve) => {
        timer = setTimeout(() => resolve(ring), STALE_WAIT_MS);
      });
      return Promise.race([reading, patience]).finally(() => clearTimeout(timer));
    }
    this.first ??= this.load().finally(() => {
      this.first = null;
    });
    return this.first;
  }

  /** Reads the keys again: one read at a time, at least a second apart. */
  private reload(): Promise<Ring> {
    this.reloading ??= (async () => {
      const wait = (this.ring?.loadedAt ?? -Infinity) + MIN_RELOAD_GAP_MS - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      return this.load();
    })().finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  private async load(): Promise<Ring> {
    const versions = await loadVersions(this.keys, this.use, this.now);
    const ring = { versions, loadedAt: performance.now() };
    this.ring = ring;
    return ring;
  }
}

function ofUse(use: string): Filter<ServiceKeyDoc> {
  return { $or: [{ _id: use }, { use }] };
}

function versionOf(doc: ServiceKeyDoc): KeyVersion {
  const key = Buffer.from(doc.key, 'base64');
  if (key.length !== 32) throw new Error(`service key ${doc._id} is not 32 bytes`);
  return { version: doc.version ?? 1, key, createdMs: doc.created_ms };
}

/** Every version of `use`, oldest first; the first is made when there is none. */
async function loadVersions(keys: Collection<ServiceKeyDoc>, use: string, now: () => number): Promise<KeyVersion[]> {
  const found = await keys.find(ofUse(use)).toArray();
  if (found.length > 0) return found.map(versionOf).sort((a, b) => a.version - b.version);
  const key = randomBytes(32);
  const doc: ServiceKeyDoc = { _id: use, use, version: 1, key: key.toString('base64'), created_ms: now() };
  try {
    await keys.insertOne(doc);
    return [versionOf(doc)];
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const won = await keys.find(ofUse(use)).toArray();
    if (won.length === 0) throw err;
    return won.map(versionOf).sort((a, b) => a.version - b.version);
  }
}

/** The versions of every use in the store (never the keys), for the CLI. */
export async function listServiceKeys(keys: Collection<ServiceKeyDoc>): Promise<Array<{ use: string; version: number; id: string; createdMs: number }>> {
  const docs = await keys.find({}, { projection: { key: 0 } }).toArray();
  return docs
    .map((d) => ({ use: d.use ?? d._id, version: d.version ?? 1, id: d._id, createdMs: d.created_ms }))
    .sort((a, b) => a.use.localeCompare(b.use) || a.version - b.version);
}

/**
 * Adds a new version of `use` (the first one too, when there is none). Running
 * processes read it within their reload interval, and seal or sign with it once it
 * is twice that old; every version stays usable to open and verify until retired.
 */
export async function rotateServiceKey(keys: Collection<ServiceKeyDoc>, use: string, now: () => number = Date.now): Promise<{ version: number; id: string }> {
  for (let tries = 1; ; tries++) {
    const versions = await loadVersions(keys, use, now);
    const version = (versions[versions.length - 1] as KeyVersion).version + 1;
    const id = `${use}:v${version}`;
    try {
      await keys.insertOne({ _id: id, use, version, key: randomBytes(32).toString('base64'), created_ms: now() });
      return { version, id };
    } catch (err) {
      // Another rotation took this number: count again.
      if (!isDuplicateKey(err) || tries >= 5) throw err;
    }
  }
}

/**
 * Deletes version `version` of `use`, which must not be the newest, and whose
 * successor must be at least `minAgeMs` old (what was sealed or signed under it is
 * gone by then). Returns why not, or null once deleted.
 */
export async function retireServiceKey(
  keys: Collection<ServiceKeyDoc>,
  use: string,
  version: number,
  minAgeMs: number,
  now: () => number = Date.now,
): Promise<string | null> {
  const docs = await keys.find(ofUse(use), { projection: { key: 0 } }).toArray();
  const doc = docs.find((d) => (d.version ?? 1) === version);
  if (!doc) return `${use} has no version ${version}`;
  const next = docs.filter((d) => (d.version ?? 1) > version).sort((a, b) => (a.version ?? 1) - (b.version ?? 1))[0];
  if (!next) return `version ${version} is the newest of ${use}: rotate first`;
  if (now() - next.created_ms < minAgeMs) {
    return `version ${next.version ?? 1} of ${use} is younger than ${Math.round(minAgeMs / 3_600_000)} h: what version ${version} made may still be in use`;
  }
  await keys.deleteOne({ _id: doc._id });
  return null;
}

/**
 * The ledger (DESIGN section 16): every money movement of a scope posts one balance
 * transaction, exactly once, in turn with the others of its currency. What it
 * promises:
 *
 * - **Once per movement.** A posting names its movement (`key`, common/ledger.ts
 *   `movementKeys`): a payment, a refund held or released, a payout held or
 *   released, an adjustment. Its identity (`ledger_keys`, `_id` = balance + key) is
 *   claimed by an insert before its round writes the balance, naming the
 *   transaction to come (a payment's is claimed with its succeeded event,
 *   `HeldIdentity`); a retried job, a sweeper or a second writer that posts the
 *   same movement has its claim refused, finds the first transaction and gets it
 *   back, posting nothing (`claim`). Transactions are never updated or deleted: a
 *   release is a reversal.
 * - **In order, and always balanced.** A currency's postings take turns on its
 *   balance document (`balances`, one per project, mode and currency): each gets the
 *   next `seq` and the `balance_after` it leaves, and the balance's `available` is
 *   the sum of their `net`. The balance is updated first, carrying in its `tail`
 *   every transaction whose insert is not yet confirmed (each as a string,
 *   common/ledger.ts `tailEntry`); the transactions are
 *   inserted after. A crash between the two leaves them in the tail, and the next
 *   round of that balance (or the sweeper, `completeTails`) inserts them before
 *   anything else: a claim whose transaction is missing then belongs to a round
 *   still running or dead, never to a posted movement.
 * - **Holds never overdraw.** A hold (`hold`, a payout's) is refused with
 *   `balance_insufficient` when the balance's `available` is short, decided on the
 *   balance as the round read it, and the update is conditional on its `seq`
 *   (`atomicConditionalUpdates`, common/store-profile.ts), so a round that raced
 *   another reads again and decides again. On a store without atomic conditional
 *   updates the balance's Redis lock is the guard, fenced right before the update
 *   (../record-lock.ts), as for the payment intents.
 * - **Off the request's path, in rounds.** The postings of one balance that meet in
 *   a worker go in one round, and rounds that follow one another keep the balance's
 *   lock and the balance as they wrote it (a session, `drain`): a round is its
 *   claims and its transactions in the worker's grouped inserts (../group-commit.ts)
 *   and one update of the balance; no read but the session's first.
 */
import type { Redis } from 'ioredis';
import type { Filter } from 'mongodb';
import type { BalanceDoc, BalanceTransactionDoc, BalanceTransactionType, LedgerKeyDoc } from '../../common/documents.js';
import type { IdGenerator } from '../../common/ids.js';
import type { Scope } from '../../common/jobs.js';
import { balanceId, entriesOf, ledgerKeyId, NO_OPERATOR, tailEntry, tailTransactions } from '../../common/ledger.js';
import type { Collections } from '../../common/mongo.js';
import { isDuplicateKey } from '../../common/mongo.js';
import { retryInfrastructure } from '../../common/retry.js';
import { conditionalUpdateFilter } from '../../common/store-profile.js';
import type { InsertBatcher } from '../group-commit.js';
import type { Gate } from '../write-gate.js';
import { RecordLock } from '../record-lock.js';

/** A movement to post. */
export interface Posting extends Scope {
  /** The movement's identity within its balance (common/ledger.ts `movementKeys`). */
  key: string;
  currency: string;
  type: BalanceTransactionType;
  /** Signed, minor units: the gross amount the movement brings (> 0) or takes (< 0). */
  amount: number;
  /** The service's fee taken from a payment (>= 0); 0 by default. */
  fee?: number;
  /** The object that moved the money (`pi_…`, `re_…`, `po_…`, `adj_…`). */
  source: string;
  operator: string | null;
  description?: string | null;
}

/**
 * A movement's identity claimed by a write its path makes anyway (a payment's: its
 * succeeded event's claim in `event_keys`, ../event-identity.ts), naming the
 * transaction that posts it: its round inserts no `ledger_keys` claim of its own.
 */
export interface HeldIdentity {
  txn: string;
  /** When it was claimed (epoch ms): a claim's lease runs from it. */
  claimedMs: number;
  /** This call's own insert made it, so nothing was posted under it before; false: a retry's, found. */
  fresh: boolean;
}

export type PostOutcome =
  /** `again`: the movement was posted before (a retry, or another writer): `txn` is that first posting. */
  | { kind: 'posted'; txn: BalanceTransactionDoc; again: boolean }
  /** A hold refused: the balance's `available` was short. Nothing posted. */
  | { kind: 'insufficient'; available: number };

export interface BalanceLedgerDeps {
  collections: Pick<Collections, 'balances' | 'balanceTransactions' | 'ledgerKeys'>;
  inserts: InsertBatcher;
  redis: Redis;
  prefix: string;
  ids: IdGenerator;
  /** Epoch ms. */
  now: () => number;
  /** common/store-profile.ts: when true, the balance's update is conditional on its `seq`. */
  atomicConditionalUpdates: boolean;
  /** The process's write gate, for the balance's update (../lifecycle/write-gate.ts); none: sent at once. */
  gate?: Gate;
}

/** A balance's lock: its writes are fenced, so a short ttl, as a payment intent's. */
const BALANCE_LOCK = { ttlMs: 3_000, waitMs: 5_000 };
/** Postings one round takes at most. */
const ROUND_MAX = 64;
const MAX_RACES = 8;
const WRITE_RETRY = { tries: 6, baseMs: 100, capMs: 2000 };
/** Transaction ids known to be inserted, so a round does not look for its predecessor's tail again. */
const KNOWN_MAX = 4096;
/**
 * How long a claim is its round's alone. No live round takes that long from its
 * claims to its balance's update: it gives up (writes nothing) past the lease less
 * the margin, and the claims of a round that died are adopted once the lease is over.
 */
export const CLAIM_LEASE_MS = 15_000;
const CLAIM_LEASE_MARGIN_MS = 5_000;

/** The rounds of one balance that follow one another under one hold of its lock (BalanceLedger.drain). */
interface Session {
  lock: RecordLock;
  /** The balance as the session last wrote it; undefined: read it (first round, or after a race). */
  balance: BalanceDoc | null | undefined;
  rounds: number;
  openedMs: number;
  /** Transactions the balance counts whose inserts are not confirmed: carried in each tail the session writes. */
  unconfirmed: BalanceTransactionDoc[];
  /** The rounds' inserts still running. */
  inserting: Set<Promise<void>>;
  /** The posting time of the balance's last transaction: the next ones are not earlier. */
  lastCreatedMs: number;
}

/**
 * How long one hold of a balance's lock lasts at most (rounds, ms), and how long its
 * worker then waits before taking it again: the other workers posting to that
 * balance get their turn, well within their wait for the lock.
 */
const SESSION_ROUNDS = 32;
const SESSION_MS = 1_000;
const YIELD_MS = 40;
/**
 * How long a session with nothing to post keeps the balance before it frees the lock:
 * postings that come a moment apart (a worker's jobs finish one by one) then go on
 * in the same session, without taking the lock again or reading the balance.
 */
const SESSION_IDLE_MS = 25;

/** A round's identities: the transaction ids it claimed or adopted, and the movements found posted before (or still being posted). */
interface Claims {
  txn: Map<string, string>;
  before: Map<string, PostOutcome | Error>;
  /** When its claims were made (epoch ms); null when it made none. */
  oldest: number | null;
}

interface Waiting {
  posting: Posting;
  identity?: HeldIdentity;
  /** A hold: refused when the balance's `available` would fall below 0. */
  guard: boolean;
  resolve: (outcome: PostOutcome) => void;
  reject: (err: unknown) => void;
}

/** The `claimedHere` entry of a held identity (HeldIdentity), apart from the `ledger_keys` ids. */
function heldClaimId(txn: string): string {
  return `held:${txn}`;
}

export function balanceLockKey(prefix: string, balance: string): string {
  return `${prefix}:balances-lock:${balance}`;
}

export class BalanceLedger {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly running = new Set<string>();
  private readonly known = new Set<string>();
  /** Claims this process made and has not posted yet, by identity: their transaction ids. Its own retry takes them up at once. */
  private readonly claimedHere = new Map<string, string>();
  /** Movements this process posted, by balance and key: a second posting of one (a refund's end) reads nothing. */
  private readonly postedHere = new Map<string, BalanceTransactionDoc>();
  /** A session's idle wait, by balance: the next posting of that balance ends it. */
  private readonly idle = new Map<string, () => void>();

  constructor(private readonly deps: BalanceLedgerDeps) {}

  /**
   * Posts a movement once; a movement posted before answers its first transaction.
   * Its identity is always claimed in the round, under the balance's lock: even the
   * job that took the change's first claim may meet a retry of itself (a job run
   * again after its lock was lost) that posted it meanwhile.
   */
  post(posting: Posting, identity?: HeldIdentity): Promise<PostOutcome> {
    return this.enqueue(posting, false, identity);
  }

  /**
   * Takes `amount` (> 0) from the `available` balance of `posting.currency`, atomically:
   * `insufficient` when short, and concurrent holds never overdraw it together.
   * `posting.amount` is ignored for the sign: a hold always takes.
   */
  hold(posting: Posting): Promise<PostOutcome> {
    return this.enqueue({ ...posting, amount: -Math.abs(posting.amount) }, true);
  }

  private enqueue(posting: Posting, guard: boolean, identity?: HeldIdentity): Promise<PostOutcome> {
    if (!Number.isSafeInteger(posting.amount) || posting.amount === 0) return Promise.reject(new Error(`ledger: posting ${posting.key} has no whole amount`));
    const balance = balanceId(posting, posting.currency);
    return new Promise<PostOutcome>((resolve, reject) => {
      const list = this.waiting.get(balance) ?? [];
      list.push({ posting, guard, identity, resolve, reject });
      this.waiting.set(balance, list);
      this.idle.get(balance)?.();
      if (!this.running.has(balance)) void this.drain(balance);
    });
  }

  /**
   * Rounds of one balance, one after another. Consecutive rounds, and those whose
   * postings come within SESSION_IDLE_MS of the last, keep the balance's lock (a
   * session, at most SESSION_ROUNDS of them or SESSION_MS) and the balance as the last
   * one wrote it, so they neither take the lock again nor read the balance. A
   * round's inserts run beside the next round; until they are confirmed, its
   * transactions ride in every tail the session writes, so a crash loses none.
   */
  private async drain(balance: string): Promise<void> {
    this.running.add(balance);
    let session: Session | null = null;
    try {
      for (;;) {
        const list = this.waiting.get(balance) ?? [];
        if (list.length === 0) {
          if (!session) break;
          if (Date.now() - session.openedMs < SESSION_MS && (await this.arrival(balance))) continue;
          await this.close(session);
          session = null;
          continue;
        }
        const round = list.splice(0, ROUND_MAX);
        if (list.length === 0) this.waiting.delete(balance);
        // A movement this process posted answers from memory: a round of only those takes no lock and reads nothing.
        const cached = round.map((w) => this.postedHere.get(ledgerKeyId(balance, w.posting.key)));
        if (cached.every((txn) => txn !== undefined)) {
          round.forEach((w, i) => w.resolve({ kind: 'posted', txn: cached[i]!, again: true }));
          continue;
        }
        try {
          session ??= await this.open(balance);
          const { outcomes, inserted } = await this.round(balance, round, session);
          // Answered once the transactions are inserted, so a read that follows finds them; the next round does not wait.
          const settle = () =>
            round.forEach((w, i) => {
              const outcome = outcomes[i] as PostOutcome | Error;
              if (outcome instanceof Error) w.reject(outcome);
              else w.resolve(outcome);
            });
          inserted.then(settle, (err: unknown) => round.forEach((w) => w.reject(err)));
          if (++session.rounds >= SESSION_ROUNDS || Date.now() - session.openedMs >= SESSION_MS) {
            await this.close(session);
            session = null;
            // Other workers poll for the lock every 10 to 40 ms: one of them takes it now, if waiting.
            await new Promise((resolve) => setTimeout(resolve, YIELD_MS));
          }
        } catch (err) {
          for (const w of round) w.reject(err);
          if (session) await this.close(session);
          session = null;
        }
      }
    } finally {
      this.running.delete(balance);
    }
  }

  /** Whether a posting of `balance` comes within SESSION_IDLE_MS. */
  private arrival(balance: string): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), SESSION_IDLE_MS);
      const done = (came: boolean) => {
        clearTimeout(timer);
        this.idle.delete(balance);
        resolve(came);
      };
      this.idle.set(balance, () => done(true));
    });
  }

  private async open(balance: string): Promise<Session> {
    const lock = new RecordLock(this.deps.redis, balanceLockKey(this.deps.prefix, balance), BALANCE_LOCK);
    await lock.acquire();
    return { lock, balance: undefined, rounds: 0, openedMs: Date.now(), unconfirmed: [], inserting: new Set(), lastCreatedMs: 0 };
  }

  /** Ends a session once its inserts are done (a next holder's read then finds its tails written), and frees the lock. */
  private async close(session: Session): Promise<void> {
    await Promise.allSettled([...session.inserting]);
    await session.lock.release().catch(() => undefined);
  }

  /** One round: the postings of one balance, in order, under the session's lock; its inserts are left running (Session). */
  private async round(balance: string, waiting: Waiting[], session: Session): Promise<{ outcomes: Array<PostOutcome | Error>; inserted: Promise<void> }> {
    const postings = waiting.map((w) => w.posting);
    const guards = waiting.map((w) => w.guard);
    const { collections: c } = this.deps;
    // Inserts left behind too far: wait for them, so the tails stay short; failed ones are written again by a read's completeTail.
    if (session.unconfirmed.length > ROUND_MAX) {
      await Promise.allSettled([...session.inserting]);
      if (session.unconfirmed.length > ROUND_MAX) session.balance = undefined;
    }
    let claims: Claims | null = null;
    // The claims this round inserted, and whether it has sent its balance's update: a round
    // that fails before that takes its claims back, so a retry elsewhere need not wait out their lease.
    const made: string[] = [];
    // The held identities it takes as its claims: not its to take back (Waiting.identity).
    const held: string[] = [];
    let sent = false;
    try {
      for (let race = 0; race < MAX_RACES; race++) {
        let before = session.balance;
        if (before === undefined) {
          before = await c.balances.findOne({ _id: balance });
          if (before) await this.completeTail(before);
          session.lastCreatedMs = before ? (tailTransactions(before).at(-1)?.created_ms ?? 0) : 0;
          // Every transaction the balance counts is written now: none left to carry.
          session.unconfirmed = [];
        }
        // The round's identities: claimed once, held across its races.
        claims ??= await this.claim(balance, waiting, made, held);
        const outcomes: Array<PostOutcome | Error | null> = waiting.map((w) => claims!.before.get(w.posting.key) ?? null);
        const now = this.deps.now();
        let available = before?.available ?? 0;
        let seq = before?.seq ?? 0;
        // Posting times never go back within a balance: a statement's range follows `seq`.
        const createdMs = Math.max(now, session.lastCreatedMs);
        const byOperator: Record<string, number> = { ...(before?.by_operator ?? {}) };
        const posted: BalanceTransactionDoc[] = [];
        const inRound = new Map<string, BalanceTransactionDoc>();
        postings.forEach((p, i) => {
          if (outcomes[i]) return;
          const twin = inRound.get(p.key);
          if (twin) return void (outcomes[i] = { kind: 'posted', txn: twin, again: true });
          const fee = p.fee ?? 0;
          const net = p.amount - fee;
          if (guards[i] && available + net < 0) return void (outcomes[i] = { kind: 'insufficient', available });
          available += net;
          seq += 1;
          const operator = p.operator ?? NO_OPERATOR;
          byOperator[operator] = (byOperator[operator] ?? 0) + net;
          const txn: BalanceTransactionDoc = {
            _id: claims!.txn.get(p.key) ?? this.deps.ids.next('balance_transaction'),
            project: p.project,
            livemode: p.livemode,
            currency: p.currency,
            key: p.key,
            type: p.type,
            amount: p.amount,
            fee,
            net,
            source: p.source,
            operator: p.operator,
            description: p.description ?? null,
            created: Math.floor(createdMs / 1000),
            created_ms: createdMs,
            seq,
            balance_after: available,
            entries: entriesOf(p.type, p.amount, fee),
          };
          posted.push(txn);
          inRound.set(p.key, txn);
          outcomes[i] = { kind: 'posted', txn, again: false };
        });
        if (posted.length === 0) return { outcomes: outcomes as Array<PostOutcome | Error>, inserted: Promise.resolve() };
        const tail = [...session.unconfirmed, ...posted];
        const after: Omit<BalanceDoc, '_id'> = { project: postings[0]!.project, livemode: postings[0]!.livemode, currency: postings[0]!.currency, available, by_operator: byOperator, seq, tail: tail.map(tailEntry), updated_ms: now };
        sent = true;
        const written = await this.writeBalance(session.lock, balance, before, claims.oldest, after);
        if (written !== 'written') {
          session.balance = undefined;
          if (written === 'lost') await session.lock.acquire();
          continue;
        }
        session.balance = { _id: balance, ...after };
        session.lastCreatedMs = createdMs;
        session.unconfirmed = tail;
        for (const id of [...made, ...held]) this.claimedHere.delete(id);
        // Posted: a retry of any of them answers from memory from now on.
        for (const txn of posted) this.postedHere.set(ledgerKeyId(balance, txn.key), txn);
        const claimed = claims.txn;
        const inserted = this.insertTail(posted, (txn) => !claimed.has(txn.key)).then(() => {
          session.unconfirmed = session.unconfirmed.filter((txn) => !posted.includes(txn));
        });
        session.inserting.add(inserted);
        void inserted.catch(() => undefined).finally(() => session.inserting.delete(inserted));
        return { outcomes: outcomes as Array<PostOutcome | Error>, inserted };
      }
      throw new Error(`balance ${balance}: still changing after ${MAX_RACES} tries`);
    } catch (err) {
      if (!sent) await this.release(made);
      throw err;
    }
  }

  /** Takes back claims whose round failed before it sent its balance's update (best effort: a claim left is adopted after its lease). */
  private async release(made: string[]): Promise<void> {
    await Promise.all(
      made.map(async (id) => {
        await this.deps.collections.ledgerKeys.deleteOne({ _id: id }).catch(() => undefined);
        this.claimedHere.delete(id);
      }),
    );
  }

  /**
   * The round's identities, under the balance's lock, before its balance is written.
   * A movement new to this process is claimed by inserting its identity, naming the
   * transaction that will post it, in the worker's grouped inserts: no read. A claim
   * refused as a duplicate was made before: its transaction, when written, is that
   * first posting; when missing, the claim's round is still running (the posting
   * fails, and its job's retry finds it posted) or died before writing its balance
   * (older than CLAIM_LEASE_MS, which no live round outlasts: it is adopted, and its
   * transaction posted now). A hold (guarded) is decided on the balance first, so its
   * identity is read, and written with its transaction. A held identity (a payment's,
   * HeldIdentity) is taken as its claim when fresh; a retry's is posted when its
   * transaction is found, and otherwise adopted as a refused claim is.
   */
  private async claim(balance: string, waiting: Waiting[], made: string[], heldMade: string[]): Promise<Claims> {
    const claims: Claims = { txn: new Map(), before: new Map(), oldest: null };
    const { collections: c, inserts } = this.deps;
    const claimedMs = this.deps.now();
    const found = (key: string, outcome: PostOutcome | Error) => void claims.before.set(key, outcome);
    const adopt = (key: string, identity: LedgerKeyDoc) => {
      // This process's own claim, from a round that failed: no other round of it runs, and the balance was read since.
      if (this.claimedHere.get(identity._id) === identity.txn) {
        claims.txn.set(key, identity.txn);
        claims.oldest = Math.min(claims.oldest ?? Infinity, identity.claimed_ms ?? 0);
        return;
      }
      if (claimedMs - (identity.claimed_ms ?? 0) < CLAIM_LEASE_MS) return found(key, new Error(`ledger: movement ${key} is being posted by another round`));
      claims.txn.set(key, identity.txn);
    };
    const seen = new Set<string>();
    await Promise.all(
      waiting.map(async ({ posting: { key }, guard, identity: held }) => {
        if (seen.has(key)) return;
        seen.add(key);
        const here = this.postedHere.get(ledgerKeyId(balance, key));
        if (here) return found(key, { kind: 'posted', txn: here, again: true });
        if (held) {
          const id = heldClaimId(held.txn);
          if (held.fresh) {
            this.claimedHere.set(id, held.txn);
            heldMade.push(id);
            claims.txn.set(key, held.txn);
            claims.oldest = Math.min(claims.oldest ?? Infinity, held.claimedMs);
            return;
          }
          const txn = await c.balanceTransactions.findOne({ _id: held.txn });
          if (txn) return found(key, { kind: 'posted', txn, again: true });
          return adopt(key, { _id: id, txn: held.txn, claimed_ms: held.claimedMs });
        }
        if (guard) {
          const before = await this.postedBefore(balance, key);
          if (before?.txn) return found(key, { kind: 'posted', txn: before.txn, again: true });
          if (before) adopt(key, before.identity);
          return;
        }
        const txn = this.deps.ids.next('balance_transaction');
        try {
          const id = ledgerKeyId(balance, key);
          await inserts.insert(c.ledgerKeys, { _id: id, txn, claimed_ms: claimedMs });
          made.push(id);
          this.claimedHere.set(id, txn);
          claims.txn.set(key, txn);
          claims.oldest = Math.min(claims.oldest ?? Infinity, claimedMs);
        } catch (err) {
          if (!isDuplicateKey(err)) throw err;
          const before = await this.postedBefore(balance, key);
          if (!before) throw new Error(`balance ${balance}: movement ${key} was claimed, and its claim was taken back meanwhile`);
          if (before.txn) return found(key, { kind: 'posted', txn: before.txn, again: true });
          adopt(key, before.identity);
        }
      }),
    );
    return claims;
  }

  /** The identity of `key`, if one was written, and the transaction it names, if that was written too. */
  private async postedBefore(balance: string, key: string): Promise<{ identity: LedgerKeyDoc; txn: BalanceTransactionDoc | null } | null> {
    const { collections: c } = this.deps;
    const identity = await c.ledgerKeys.findOne({ _id: ledgerKeyId(balance, key) });
    if (!identity) return null;
    return { identity, txn: await c.balanceTransactions.findOne({ _id: identity.txn }) };
  }

  /**
   * The balance's update: conditional on the `seq` read when the store applies
   * conditions atomically, by `_id` alone otherwise; fenced by the lock either way.
   * A first posting inserts the balance (a duplicate is a race lost).
   */
  private async writeBalance(lock: RecordLock, balance: string, before: BalanceDoc | null, claimedMs: number | null, after: Omit<BalanceDoc, '_id'>): Promise<'written' | 'raced' | 'lost'> {
    const c = this.deps.collections.balances;
    const send = async (): Promise<'written' | 'raced' | 'lost'> => {
      // Past its claims' lease, another round may adopt them: this one writes nothing (its job's retry will find them).
      if (claimedMs !== null && this.deps.now() - claimedMs >= CLAIM_LEASE_MS - CLAIM_LEASE_MARGIN_MS) throw new Error(`balance ${balance}: the round outlasted its claims' lease`);
      if (!(await lock.renew())) return 'lost';
      if (!before) {
        try {
          await c.insertOne({ _id: balance, ...after });
          return 'written';
        } catch (err) {
          if (isDuplicateKey(err)) return 'raced';
          throw err;
        }
      }
      const filter = conditionalUpdateFilter(this.deps, balance, { seq: before.seq }) as Filter<BalanceDoc>;
      const { project: _p, livemode: _l, currency: _c, ...moving } = after;
      const result = await c.updateOne(filter, { $set: moving });
      return result.matchedCount === 1 ? 'written' : 'raced';
    };
    const gated = () => (this.deps.gate ? this.deps.gate.run(send, 'first') : send());
    return retryInfrastructure(gated, WRITE_RETRY);
  }

  /**
   * Inserts a tail's transactions, and the identities of those `withIdentity` says
   * were not claimed (all of them, when a tail a crash left is completed); those
   * already there are skipped.
   */
  private async insertTail(tail: BalanceTransactionDoc[], withIdentity: (txn: BalanceTransactionDoc) => boolean = () => true): Promise<void> {
    const { collections: c, inserts } = this.deps;
    const once = (p: Promise<void>) =>
      p.catch((err: unknown) => {
        if (!isDuplicateKey(err)) throw err;
      });
    // Sent at once: the round has all its documents (InsertBatcher.insertNow).
    const identities = tail.filter(withIdentity).map((txn) => ({ _id: ledgerKeyId(balanceId(txn, txn.currency), txn.key), txn: txn._id }));
    await Promise.all([...inserts.insertNow(c.balanceTransactions, tail), ...inserts.insertNow(c.ledgerKeys, identities)].map(once));
    for (const txn of tail) this.remember(txn);
  }

  /** Writes what a round left in the balance's tail, unless it is known to be written. */
  async completeTail(balance: BalanceDoc): Promise<void> {
    const unknown = tailTransactions(balance).filter((txn) => !this.known.has(txn._id));
    if (unknown.length === 0) return;
    await this.insertTail(unknown);
  }

  /**
   * The sweeper's part: writes the tails of the balances changed within `recentMs`
   * (at most `limit` of them, newest first), so a round whose inserts a crash cut
   * short is complete though no other posting follows it. No lock: a tail holds
   * postings already made, and writing one again is a no-op.
   */
  async completeTails(recentMs: number, limit = 1000): Promise<{ balances: number }> {
    const since = this.deps.now() - recentMs;
    const changed = await this.deps.collections.balances.find({ updated_ms: { $gte: since } }).sort({ updated_ms: -1 }).limit(limit).toArray();
    for (const balance of changed) await this.completeTail(balance);
    return { balances: changed.length };
  }

  private remember(txn: BalanceTransactionDoc): void {
    if (this.known.size >= KNOWN_MAX) this.known.clear();
    if (this.postedHere.size >= KNOWN_MAX) this.postedHere.clear();
    this.known.add(txn._id);
    this.postedHere.set(ledgerKeyId(balanceId(txn, txn.currency), txn.key), txn);
  }

}

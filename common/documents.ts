import type { CancellationReason, DeclineCode, FollowUp, NextAction, PaymentError, PaymentIntentStatus } from './lifecycle.js';
import type { MetadataPairs } from './metadata.js';

/**
 * Storage documents. Every resource carries its scope (project, livemode); `_id` is
 * the public id, time-ordered, so `_id` order is creation order. Only features that
 * every supported store has are used: no TTL indexes, no transactions, no change
 * streams (docs/storage.md).
 *
 * The local stack's store uses no index for queries: every find or update costs a
 * scan of its collection there, while inserts stay cheap and unique indexes are
 * still enforced on insert. So a create is one insert: the idempotency record lives
 * in the object's own document, written atomically with it, and the created event is
 * the object itself until it changes (common/created-events.ts).
 */

/**
 * The idempotency record of the request that created the object, when it had a key.
 * `idem` is unique (a sparse index), so a key can create at most one object in a
 * scope; the sweeper unsets it once the key expires, freeing the key.
 */
export interface IdempotencyFields {
  /** sha256 of (project, livemode, key). */
  idem?: string;
  idem_fp?: string;
  /** Epoch ms. */
  idem_expires_at?: number;
}

export interface PaymentIntentDoc extends IdempotencyFields {
  _id: string;
  project: string;
  livemode: boolean;
  amount: number;
  currency: string;
  description: string | null;
  status: PaymentIntentStatus;
  client_secret: string;
  automatic_operator: boolean;
  allowed_operators: string[];
  selected_operator: string | null;
  metadata: MetadataPairs;
  created: number;
  expires_at: number;
  /**
   * Confirms so far: every transition is a conditional update on (status, attempt),
   * and an operator outcome carries the attempt it answers, so a late one is dropped.
   * Absent on a document no transition has touched yet (read as 0).
   */
  attempt?: number;
  /** Bumped by every mutation: the condition of each conditional update. */
  rev?: number;
  next_action?: NextAction | null;
  last_payment_error?: PaymentError | null;
  /** The attempt in flight or last made: the phone number in full only until the attempt ends. */
  payment?: PaymentAttempt | null;
  canceled_at?: number | null;
  cancellation_reason?: CancellationReason | null;
  /**
   * The last mutations applied to the intent (at most HISTORY_KEEP), written in the
   * same update as the transition: a retried job finds its own entry and answers it
   * again instead of applying anything twice. Small entries: a request's answer is
   * in `intent_mutations` (MutationDoc); the newest entry keeps its event's JSON
   * until the next transition (worker/lifecycle/transition.ts).
   */
  history?: MutationEntry[];
  /**
   * When a transition last changed it (epoch ms): a reconnect's sweep looks there for
   * the events of recent transitions whose jobs Redis may have lost
   * (worker/processors/sweep-intents.ts).
   */
  changed_ms?: number;
  /** Attempts that ended declined or failed: past `CONFIRM_FAILURE_LIMIT`, confirms are refused. */
  failures?: number;
  /**
   * The `payment_intent.created` event as earlier versions stored it, beside the
   * object in the same insert. No longer written: the event is derived from the
   * intent while it is unchanged, and recorded in `events` before its first change
   * (common/created-events.ts). Read when present; the first change drops it.
   */
  created_event?: string;
  /** The sum of the amounts of its succeeded refunds (absent: 0). */
  amount_refunded?: number;
  /**
   * What its refunds hold: the sum of its pending and succeeded refunds (absent: 0).
   * What remains refundable is `amount - amount_held`; see worker/refunds/ledger.ts.
   */
  amount_held?: number;
  /**
   * The refunds ledger: one entry per refund, written in the same update as the
   * hold or release it causes, so each refund changes the amounts exactly once.
   */
  refunds?: RefundLedgerEntry[];
  /** How many of `refunds` are pending: the refunds sweeper reads the intents where it is above 0. */
  refunds_pending?: number;
}

/** One refund as its payment intent records it (worker/refunds/ledger.ts). */
export interface RefundLedgerEntry {
  /** The refund's id. */
  id: string;
  /** The mutation that made it (a keyed request's is its key's): a retried job finds it here. */
  m: string;
  /** Epoch ms: when `m` is an idempotency key's, the key's expiry; past it the entry answers no one. */
  x?: number;
  amount: number;
  status: RefundStatus;
  /** Unix seconds: the refund's `created`. */
  c: number;
  /** The refund's `reason`, so the sweeper can rebuild a refund whose document a lost job never wrote. */
  reason: RefundReason | null;
  /** The ids of the events its transitions recorded. */
  ev: { created: string; settled?: string; refunded?: string };
  /** After it succeeded: the intent's `amount_refunded` then (the `payment_intent.refunded` event shows it). */
  ar?: number;
  /** After it failed: why. */
  fr?: DeclineCode;
  /**
   * A late payment's refund (worker/reconcile/): the money of another attempt than the
   * intent's, given back. It neither holds nor refunds the intent's own amount.
   */
  late?: LatePayment;
}

/** The attempt whose payment a `late_payment` refund gives back, as the operator recorded it. */
export interface LatePayment {
  attempt: number;
  operator: string;
  account: string | null;
  /** The operator's reference of the payment (its transaction, or its session). */
  reference: string | null;
  /** Test mode: the masked number the simulator reads its outcome from. */
  phone_masked: string | null;
}

export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];
/** The reasons a client may give a refund. */
export const REFUND_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;
/** The reasons only the service sets: `late_payment`, a payment the operator took after the intent could no longer take it (worker/reconcile/). */
export const SERVICE_REFUND_REASONS = ['late_payment'] as const;
export type RefundReason = (typeof REFUND_REASONS)[number] | (typeof SERVICE_REFUND_REASONS)[number];

/**
 * A refund (DESIGN.md section 11). Its amount and status follow its entry in the
 * intent's ledger, which is written first; this document is what lists and
 * retrieves read, and the operator's side of it.
 */
export interface RefundDoc {
  _id: string;
  project: string;
  livemode: boolean;
  amount: number;
  currency: string;
  payment_intent: string;
  status: RefundStatus;
  reason: RefundReason | null;
  failure_reason: DeclineCode | null;
  description: string | null;
  metadata: MetadataPairs;
  operator: string;
  created: number;
  /** The create's answer, byte for byte (a retried create answers it again, whatever changed since). */
  answer: string;
  /** Whether the operator has been asked (`refund`); after that it is only asked for the outcome. */
  requested: boolean;
  /** The operator's own reference of the refund, once it gave one. */
  operator_reference: string | null;
  /** Polls of the operator so far: numbers the next poll's job. */
  polls: number;
}

export interface PaymentAttempt {
  operator: string;
  /** E.164, in full while the attempt is in flight (the simulator and connectors need it); null once it ended. */
  phone_number: string | null;
  phone_masked: string;
  /** The number's last four digits, kept for search (`phone_last4:'4321'`); absent on attempts made before search. */
  phone_last4?: string;
  return_url: string | null;
  /** Redirect flow: the test checkout page's token (kept after the attempt ended, to show its outcome). */
  checkout_token: string | null;
  /**
   * Live mode (worker/lifecycle/operator-check.ts). `requested`: the operator has
   * been asked for the payment (a retried ask reuses the attempt's reference).
   * `operator_reference`: its reference of the request (MTN X-Reference-Id, M-Pesa
   * CheckoutRequestID, Wave session id). `next_check_at` (epoch ms) and `checks`: the
   * attempt's next poll, which the intents sweeper enqueues again when Redis lost it.
   * `operator_transaction`: the operator's reference of the paid transaction (MTN
   * financialTransactionId, M-Pesa receipt, Wave session id), kept for refunds.
   */
  requested?: boolean;
  operator_reference?: string | null;
  next_check_at?: number | null;
  checks?: number;
  operator_transaction?: string | null;
  /**
   * Live mode (DESIGN section 14). `account`: the operator account the attempt goes
   * through (common/operator-accounts.ts). `requesting_since` (epoch ms): the first
   * check began to ask the operator; from then on the payer may be asked, so a cancel
   * of a push operator's attempt is refused. `failed_try`: the last failed try of a
   * Wave session that stayed open (its code and message), so each distinct one sends
   * one `payment_intent.payment_failed`.
   */
  account?: string | null;
  requesting_since?: number | null;
  failed_try?: string | null;
}

/** A mutation's entry in its intent's `history`: the record without its large parts. */
export interface MutationEntry {
  m: string;
  st: number;
  /** Only in entries written before the answers moved out (MutationDoc). */
  res?: string;
  /** The event's JSON is in the newest entry only. */
  /** `k`: the change's identity (worker/event-identity.ts), in the newest entry. */
  evt: { id: string; type: string; json?: string; k?: string } | null;
  fu: FollowUp[];
  at: number;
  r?: string;
  x?: number;
}

/**
 * The answer of a request's mutation of a payment intent (security review M1): the
 * body a retry of its job answers again, kept out of the intent. Keyed by (intent,
 * mutation) and read by `_id` only, by retries alone; swept with the idempotency
 * keys once `expires_at` passed.
 */
export interface MutationDoc {
  /** `<intent>:<mutation id>`. */
  _id: string;
  project: string;
  livemode: boolean;
  res: string;
  /** Epoch ms. */
  expires_at: number;
}

/** One applied mutation of a payment intent, whole (as a transition has it in memory). */
export interface MutationRecord {
  /** The mutation's id: the api's pre-generated request id, or the id of the worker's job. */
  m: string;
  /** The answer's status and body, byte for byte. */
  st: number;
  res: string;
  /** The event the transition recorded (its id and JSON), if any. */
  evt: { id: string; type: string; json: string; k?: string } | null;
  /** The delayed jobs it schedules, so a retry can schedule them again. */
  fu: FollowUp[];
  /** The intent's attempt after the transition: the attempt its delayed jobs are about. */
  at: number;
  /** The request that made it (its pre-generated id), when a request did. */
  r?: string;
  /** Epoch ms: when `m` is an idempotency key's, the key's expiry; past it the entry answers no one. */
  x?: number;
}

/**
 * Events: one insert each, with the id and JSON of the transition that recorded it.
 * A `payment_intent.created` event is here once its intent has changed; before, it is
 * the intent itself (common/created-events.ts). `/v1/events` merges both homes by id.
 */
/**
 * The identity of a side effect (DESIGN section 15): `_id` names the object and the
 * change it records (an intent's transition: `<pi>:<rev>:<type>`; a refund's event:
 * `<refund>:<type>`), `event` the event that records it. The first writer's insert
 * wins; a second writer of the same change (its lock lost to a Redis that forgot)
 * finds the key taken by another event and records nothing.
 */
export interface EventKeyDoc {
  _id: string;
  event: string;
  /** A payout batch's create request: the ids its first job chose for its items, in order (worker/payouts/create.ts). */
  items?: string[];
  /**
   * A payment's succeeded event: the balance transaction that posts the payment, and
   * when it was claimed (epoch ms). The claim is the movement's ledger identity, in
   * place of a `ledger_keys` document (worker/balance/ledger.ts `HeldIdentity`).
   */
  txn?: string;
  claimed_ms?: number;
}

export interface EventDoc {
  _id: string;
  project: string;
  livemode: boolean;
  type: string;
  object_id: string;
  json: string;
  /** Epoch ms of the event. */
  created_ms: number;
}

/**
 * The durable record of a keyed request other than a create (a create's record is
 * its object): the exact answer, inserted by the worker once the request was
 * processed. `_id` is the scope hash of the key.
 */
export interface IdempotencyRecordDoc {
  _id: string;
  project: string;
  livemode: boolean;
  fp: string;
  status: number;
  body: string;
  /** The mutation that answered (the api's pre-generated id). */
  mutation: string;
  /** Epoch ms. */
  expires_at: number;
}

/**
 * Which object a create's idempotency key made: `_id` is the key's scope hash. A
 * hint for the worker's duplicate-key path (worker/processors/create.ts), which would
 * otherwise find the key's object by its `idem` field, a scan of every object on the
 * local stack's store (docs/storage.md); the object itself stays the record (its
 * unique `idem` field decides). Written on every store, in the create's group commit.
 */
/**
 * A version of a key of the service's own (common/service-keys.ts): the first made
 * by the first process that needs it, the next ones by a rotation.
 */
export interface ServiceKeyDoc {
  /** The first version: what the key is for (`confirm_input`); a later one: `<use>:v<n>`. */
  _id: string;
  /** What the key is for; absent on a first version made by an older service (its `_id` says it). */
  use?: string;
  /** 1, 2, …; absent on a first version made by an older service (1). */
  version?: number;
  /** Base64: 32 random bytes. */
  key: string;
  /** Epoch ms. */
  created_ms: number;
}

export interface IdempotencyKeyDoc {
  _id: string;
  /** The object's id. */
  object: string;
  /** Epoch ms: the key's expiry, after which the sweeper deletes the pointer. */
  expires_at: number;
}

export interface WebhookEndpointDoc extends IdempotencyFields {
  _id: string;
  project: string;
  livemode: boolean;
  url: string;
  enabled_events: string[];
  description: string | null;
  metadata: MetadataPairs;
  status: 'enabled' | 'disabled';
  /** `whsec_…`; signs deliveries. Presented only in the create and rotation responses. */
  secret: string;
  /** After a rotation with a grace period: the secret before it, which also signs every delivery until `previous_secret_expires_at`. */
  previous_secret?: string | null;
  /** Epoch ms. */
  previous_secret_expires_at?: number | null;
  /** The mutation that made the current secret: a retried rotation finds it and makes no second one. */
  rotated_by?: string | null;
  created: number;
  /** Epoch ms of the first failure of the current run of failures; null when the last attempt succeeded. */
  failing_since: number | null;
  disabled_reason: string | null;
}

/**
 * The outbox: the durable record of an event's pending deliveries. Inserted after
 * the object when its scope has endpoints, deleted (in batches) once every delivery
 * of the event has succeeded or finally failed. So MongoDB, not Redis, says which
 * work is pending, and the collection holds only pending events: small, and cheap
 * for the sweeper to read.
 */
export interface OutboxDoc {
  /** The event id. */
  _id: string;
  project: string;
  livemode: boolean;
  type: string;
  json: string;
  /** Epoch ms of the event (its object's id time): the sweeper's age, and the cut-off for endpoints created later. */
  created_ms: number;
}

export interface ApiKeyDoc {
  _id: string;
  project: string;
  livemode: boolean;
  /** sha256 hex of the secret; the secret itself is never stored. */
  hash: string;
  last4: string;
  created: number;
  revoked_at: number | null;
}

export interface WebhookAttemptDoc {
  _id: string;
  project: string;
  livemode: boolean;
  endpoint_id: string;
  event_id: string;
  attempt: number;
  created: number;
  duration_ms: number;
  http_status: number | null;
  /** null on a 2xx; else `http_error`, `timeout`, `connection_error`, `address_refused`, `redirect`. */
  error: string | null;
  succeeded: boolean;
  response_body: string | null;
}

/**
 * A balance: what one scope holds in one currency (common/ledger.ts,
 * worker/balance/ledger.ts). `_id` is `balanceId(scope, currency)`. It is the one
 * place postings of that currency take turns: `seq` counts them, `available` is the
 * sum of their `net`, and `tail` holds the transactions whose inserts are not confirmed, written
 * to `balance_transactions` after this document; the next round (or the sweeper)
 * writes them again if a crash came between.
 */
export interface BalanceDoc {
  _id: string;
  project: string;
  livemode: boolean;
  currency: string;
  available: number;
  /** Where the money sits: the available amount per operator (`_none` for postings with no operator). */
  by_operator: Record<string, number>;
  seq: number;
  /**
   * The transactions it counts whose inserts are not confirmed, in order: each as a
   * string (common/ledger.ts `tailEntry`), or whole as written before the strings were.
   */
  tail: Array<string | BalanceTransactionDoc>;
  /** Epoch ms of the last posting: the sweeper completes the tails of balances changed lately. */
  updated_ms: number;
}

/**
 * One posting of the ledger (DESIGN section 16): never updated, never deleted. Its
 * `entries` are the double entry: they sum to zero (the merchant's balance on one
 * side, the payer, the recipient, the fees or the adjustments on the other).
 */
export interface BalanceTransactionDoc {
  _id: string;
  project: string;
  livemode: boolean;
  currency: string;
  /** The movement it posts (`payment:pi_…`, `refund:re_…`, …): unique within its balance. */
  key: string;
  type: BalanceTransactionType;
  /** Signed, minor units: the movement's gross amount. */
  amount: number;
  /** What the service's fee took of it (>= 0, payments only). */
  fee: number;
  /** amount − fee: what the balance moved by. */
  net: number;
  source: string;
  operator: string | null;
  description: string | null;
  /** Unix seconds, and epoch ms (the statements' range). */
  created: number;
  created_ms: number;
  /** The posting's place in its balance, and the balance just after it. */
  seq: number;
  balance_after: number;
  entries: LedgerEntry[];
}

export const BALANCE_TRANSACTION_TYPES = ['payment', 'refund', 'refund_failure', 'payout', 'payout_failure', 'adjustment'] as const;
export type BalanceTransactionType = (typeof BALANCE_TRANSACTION_TYPES)[number];

/** One line of a posting's double entry: the account it moves and by how much (signed). */
export interface LedgerEntry {
  account: 'available' | 'payers' | 'fees' | 'recipients' | 'adjustments';
  amount: number;
}

/**
 * The identity of a movement: `_id` is `<balance id>|<movement key>`, `txn` the
 * transaction that posts it. Written as a claim before its round writes the balance
 * (`claimed_ms`, epoch ms): a claim whose transaction is missing belongs to a round
 * still running, or to one that died before its balance was written.
 */
export interface LedgerKeyDoc {
  _id: string;
  txn: string;
  claimed_ms?: number;
}

/**
 * The job contract between the api and the workers: queue names, versioned job
 * names, and the data and result of each job, as one map per queue. Queues and
 * workers are typed from it (`TypedQueue`, `AnyJob`, `startTypedWorker`), so a
 * wrong job name, or data of the wrong shape for a name, is a compile error, and
 * `switch (job.name)` in a processor narrows `job.data`.
 */
import {
  Queue,
  UnrecoverableError,
  Worker,
  type Job,
  type JobSchedulerTemplateOptions,
  type JobsOptions,
  type QueueOptions,
  type RepeatOptions,
  type WorkerOptions,
} from 'bullmq';
import type { CancellationReason, OperatorAnswer } from './lifecycle.js';
import type { RefundReason } from './documents.js';
import type { MetadataPairs } from './metadata.js';
import type { ReconcileResult } from './operator-discrepancies.js';
import { openLayoutQueue, PLAIN_LAYOUT, queueNames, type QueueLayout } from './queue-shards.js';

export const QUEUES = {
  /**
   * Every write a request asks for: creates, confirms, cancels, updates, refunds and
   * endpoint changes. The api enqueues and waits for the result.
   */
  writes: 'writes',
  /** Fan-out of an event to the endpoints subscribed to it. */
  events: 'events',
  /** One job per (event, endpoint): a signed POST, retried on the schedule. */
  webhooks: 'webhooks',
  /**
   * The payment intents' own clock and operators: delayed jobs standing in for
   * operator callbacks (the simulator's answers included), and one expiry per intent.
   */
  intents: 'intents',
  /** Repeatable housekeeping: expired idempotency records, pending events whose jobs vanished. */
  maintenance: 'maintenance',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

export const JOBS = {
  createPaymentIntent: 'payment_intent.create.v1',
  createWebhookEndpoint: 'webhook_endpoint.create.v1',
  confirmPaymentIntent: 'payment_intent.confirm.v1',
  cancelPaymentIntent: 'payment_intent.cancel.v1',
  updatePaymentIntent: 'payment_intent.update.v1',
  updateWebhookEndpoint: 'webhook_endpoint.update.v1',
  deleteWebhookEndpoint: 'webhook_endpoint.delete.v1',
  rotateWebhookSecret: 'webhook_endpoint.rotate_secret.v1',
  resendWebhookEvent: 'webhook_endpoint.resend.v1',
  recoverWebhookEvents: 'webhook_endpoint.recover.v1',
  testWebhookEndpoint: 'webhook_endpoint.test.v1',
  operatorOutcome: 'payment_intent.operator_outcome.v1',
  operatorCheck: 'payment_intent.operator_check.v1',
  expirePaymentIntent: 'payment_intent.expire.v1',
  dispatchEvent: 'event.dispatch.v2',
  deliverWebhook: 'webhook.deliver.v1',
  sweepIdempotency: 'idempotency.sweep.v1',
  sweepEvents: 'events.sweep.v1',
  sweepIntents: 'intents.sweep.v1',
  createRefund: 'refund.create.v1',
  updateRefund: 'refund.update.v1',
  processRefund: 'refund.process.v1',
  sweepRefunds: 'refunds.sweep.v1',
  probeOperators: 'operators.probe.v1',
  reconcileOperator: 'operators.reconcile.v1',
  sweepRetention: 'retention.sweep.v1',
  createPayout: 'payout.create.v1',
  createPayoutBatch: 'payout_batch.create.v1',
  cancelPayout: 'payout.cancel.v1',
  processPayout: 'payout.process.v1',
  checkPayoutBatch: 'payout_batch.check.v1',
  sweepPayouts: 'payouts.sweep.v1',
  adjustBalance: 'ledger.adjust.v1',
} as const;

/** An admin's adjustment: `reference` is its identity (a second one with it posts nothing). */
export interface AdjustmentData extends Scope {
  /** `adj_…`, the transaction's source. */
  id: string;
  reference: string;
  currency: string;
  /** Signed, minor units. */
  amount: number;
  description: string | null;
}

/** What one pass of the retention sweeper deleted, per collection, and whether it reached the end of what was due. */
export interface RetentionPass {
  deleted: {
    payment_intents: number;
    refunds: number;
    events: number;
    webhook_attempts: number;
    payouts: number;
    payout_batches: number;
    operator_discrepancies: number;
    simulator_payments: number;
  };
  done: boolean;
}

/** The scope of every read, write and idempotency key. */
export interface Scope {
  project: string;
  livemode: boolean;
}

/** What a keyed request carries to the worker, so the worker can write the durable record. */
export interface IdempotencyJobInfo {
  /** sha256 of (project, livemode, key): the record's `_id` and the job id. */
  scopeHash: string;
  /** Not needed by the worker; shown in the dashboard, where operators look for it. */
  key: string;
  /** HMAC of the request under the current version of the fingerprint key. */
  fingerprint: string;
  /**
   * The same under the other versions the api held, while a rotated key has them
   * (common/idempotency.ts `fingerprintMatches`): a record made before the rotation
   * still stands for this request. Absent with one version.
   */
  formerFingerprints?: string[];
  /** Epoch ms when the key expires (48 h after the first request). */
  expiresAt: number;
}

/** What every job enqueued by an api request carries besides its input. */
export interface RequestJobBase extends Scope {
  /** The id of the object to create, generated by the api. A retried job reuses it. */
  id: string;
  /** Unix seconds, from the api's clock at the time of the request. */
  created: number;
  /** The request id of the request that enqueued the job (for error bodies). */
  requestId: string;
  /** Origin used for `doc_url` in error bodies. */
  baseUrl: string;
  idempotency: IdempotencyJobInfo | null;
}

export interface PaymentIntentInput {
  amount: number;
  currency: string;
  description: string | null;
  metadata: MetadataPairs;
  allowed_operators: string[];
  selected_operator: string | null;
  automatic_operator: boolean;
  expires_at: number;
}

export interface CreatePaymentIntentData extends RequestJobBase {
  input: PaymentIntentInput;
}

export interface WebhookEndpointInput {
  url: string;
  enabled_events: string[];
  description: string | null;
  metadata: MetadataPairs;
}

export interface CreateWebhookEndpointData extends RequestJobBase {
  input: WebhookEndpointInput;
}

/**
 * What every mutation of an existing object carries: like a create's, `id` is
 * generated by the api (the mutation's own id, which a retried job keeps), and
 * `target` is the object it changes.
 */
export interface MutationJobBase extends RequestJobBase {
  target: string;
}

/** Only the fields given; `metadata` is merged (a key set to "" is removed). */
export interface WebhookEndpointUpdateInput {
  url?: string;
  enabled_events?: string[];
  description?: string | null;
  metadata?: MetadataPairs;
  disabled?: boolean;
}

export interface UpdateWebhookEndpointData extends MutationJobBase {
  input: WebhookEndpointUpdateInput;
}
/** Also the data of delete and test, which take no input. */
export interface WebhookEndpointMutationData extends MutationJobBase {
  input: Record<string, never>;
}
export interface RotateWebhookSecretData extends MutationJobBase {
  input: { expire_previous_in: number };
}
export interface ResendWebhookEventData extends MutationJobBase {
  input: { event: string };
}
export interface RecoverWebhookEventsData extends MutationJobBase {
  input: { since: number };
}

export interface ConfirmInput {
  operator: string | null;
  /** E.164; the worker keeps it only for the attempt, and never logs it. */
  phone_number: string;
  otp: string | null;
  return_url: string | null;
}

/** The fields of a confirm that are no secret. */
export type ConfirmPublicInput = Omit<ConfirmInput, 'phone_number' | 'otp'>;

export interface CancelInput {
  cancellation_reason: CancellationReason | null;
}

/** Only the fields given; `metadata` is merged (a key set to "" is removed). */
export interface PaymentIntentUpdateInput {
  amount?: number;
  currency?: string;
  description?: string | null;
  metadata?: MetadataPairs;
  allowed_operators?: string[];
  selected_operator?: string | null;
  automatic_operator?: boolean;
  expires_at?: number;
}

/**
 * No phone number and no one-time code in the clear: Redis holds no secret, and the
 * dashboard shows job data. They ride in `sealed`, under the service's key and bound
 * to the request's id, `id` (common/input-seal.ts).
 */
export interface ConfirmPaymentIntentData extends MutationJobBase {
  input: ConfirmPublicInput;
  sealed: string;
}
export interface CancelPaymentIntentData extends MutationJobBase {
  input: CancelInput;
}
export interface UpdatePaymentIntentData extends MutationJobBase {
  input: PaymentIntentUpdateInput;
}

/**
 * An operator's answer about one attempt (the simulator's, or a connector's
 * callback): `payer` is the payer's step (approval on the phone, the checkout page),
 * `settle` the operator's final answer. `action` is what the checkout page's button said.
 */
export interface OperatorOutcomeData extends Scope {
  paymentIntent: string;
  attempt: number;
  step: 'payer' | 'settle';
  action?: 'pay' | 'decline' | 'cancel';
  /**
   * Live mode: the operator's own answer, read by a connector. A live intent is
   * decided by it alone (security review M3): an outcome without one changes nothing.
   */
  result?: OperatorAnswer;
  /**
   * The event of the transition that scheduled this job, recorded before the job was
   * added: its transition need not look for it (worker/lifecycle/transition.ts).
   */
  recorded?: string;
}

/**
 * The intents queue's order when it holds a backlog: a payment's last step before the
 * step that moves a payment along. BullMQ takes the jobs without a priority first, in
 * order, then the others by priority. The payer's step (`requires_action` →
 * `processing`) waits behind the settlements, the checks, the expiries and the
 * refunds' outcomes, each of which ends a payment or a refund. Under a backlog first
 * in, first out, a payment waited its length twice (once per step); this way it waits
 * it once, and the payments in flight end first (docs/faults.md). A step never waits
 * for ever: each settlement comes from a payer's step already taken.
 */
export const PAYER_STEP_PRIORITY = 1;

/** The BullMQ `priority` of an operator outcome's job (see PAYER_STEP_PRIORITY); none for the rest. */
export function outcomePriority(step: OperatorOutcomeData['step']): { priority?: number } {
  return step === 'payer' ? { priority: PAYER_STEP_PRIORITY } : {};
}

/**
 * Live mode: look at an attempt at its operator (worker/lifecycle/operator-check.ts).
 * `n` numbers the checks of the attempt's polling chain; `cb` is a check an operator
 * callback asked for (it schedules no further check). A callback's check knows the
 * intent and attempt only: its scope is read from the intent, which must be live.
 */
export interface OperatorCheckData {
  paymentIntent: string;
  attempt: number;
  n: number | 'cb';
  project?: string;
  livemode?: boolean;
}

/** The job id of check `n` of an attempt (worker/processors/operator-check.ts). */
export function operatorCheckJobId(paymentIntent: string, attempt: number, n: number | 'cb'): string {
  return `check-${paymentIntent}-${attempt}-${n}`;
}

/** An attempt id as live operators see it (`pi_…:<attempt>`), read back from a callback; null when it is not one. */
export function parseAttemptId(value: unknown): { paymentIntent: string; attempt: number } | null {
  if (typeof value !== 'string') return null;
  const match = /^(pi_[A-Za-z0-9]{1,64}):([1-9]\d{0,5})$/.exec(value);
  return match ? { paymentIntent: match[1]!, attempt: Number(match[2]) } : null;
}

export interface ExpirePaymentIntentData extends Scope {
  paymentIntent: string;
  /** The `expires_at` the job was scheduled for: an update that moved it leaves this job a no-op. */
  expiresAt: number;
}

export interface RefundInput {
  payment_intent: string;
  /** Null: what remains refundable. */
  amount: number | null;
  reason: RefundReason | null;
  description: string | null;
  metadata: MetadataPairs;
}

/** `id` is the new refund's (`re_…`); `target` is its payment intent, the object whose amounts it holds. */
export interface CreateRefundData extends MutationJobBase {
  input: RefundInput;
}

/** Only the fields given; `metadata` is merged (a key set to "" is removed). */
export interface RefundUpdateInput {
  description?: string | null;
  metadata?: MetadataPairs;
}

/** `target` is the refund. */
export interface UpdateRefundData extends MutationJobBase {
  input: RefundUpdateInput;
}

/**
 * One step of a refund with its operator (worker/refunds/process.ts): ask the
 * operator for it, or ask how it went. Ids only: the refund and its intent are read
 * from MongoDB. `poll` numbers the step (its job id), 0 being the request.
 */
export interface ProcessRefundData extends Scope {
  refund: string;
  paymentIntent: string;
  poll: number;
}

/** A payout's fields but its destination's number, which rides sealed (`sealed`). */
export interface PayoutPublicInput {
  amount: number;
  currency: string;
  /** Resolved by the api: named, or predicted from the number. */
  operator: string;
  /** Live mode: the operator account that serves the number; null in test mode. */
  account: string | null;
  /** The destination's number, masked. */
  phone_masked: string;
  name: string | null;
  description: string | null;
  metadata: MetadataPairs;
  /** A batch item's own reference; null for a payout made alone. */
  reference: string | null;
}

/** `id` and `target` are the new payout's (`po_…`); `sealed` its number (worker/payouts/destinations.ts). */
export interface CreatePayoutData extends MutationJobBase {
  input: PayoutPublicInput;
  sealed: string;
}

/** `id` and `target` are the new batch's (`pob_…`); `payouts` the ids of its items, in order; `sealed` their numbers. */
export interface CreatePayoutBatchData extends MutationJobBase {
  payouts: string[];
  input: PayoutPublicInput[];
  sealed: string;
}

/** `target` is the payout. */
export interface CancelPayoutData extends MutationJobBase {
  input: Record<string, never>;
}

/** One step of a payout (worker/payouts/process.ts): ids only, the payout is read from MongoDB. */
export interface ProcessPayoutData extends Scope {
  payout: string;
  step: number;
}

/** Whether every payout of a batch is final (worker/payouts/batches.ts). */
export interface CheckPayoutBatchData extends Scope {
  batch: string;
}

/** What a transition job reports: whether it changed the intent, or why not. */
export interface TransitionJobResult {
  applied: boolean;
  status: string | null;
  reason?: string;
}

/** The value BullMQ stores for a create job: no secrets, since the dashboard shows it. */
export interface WriteJobResult {
  ok: boolean;
  /** The id of the created object (which may differ from the job's if a key was reused). */
  id: string | null;
  status: number;
}

/** Published on the results channel when a create job finishes: the exact response. */
/** The service key (common/service-keys.ts) that seals every published answer. */
export const ANSWER_KEY_ID = 'result_answers';

export interface WriteResultMessage {
  jobId: string;
  /**
   * The fingerprint of the request the job was made for (null without a key). A
   * keyed job's id is shared by every request with that key, so a waiter whose own
   * request differs must answer `idempotency_key_reused`, not take this result.
   */
  fingerprint: string | null;
  status: number;
  /**
   * The response body, byte for byte what the first request and every replay get;
   * sealed (common/seal.ts, bound to the job id) when `sealed` is set.
   */
  body: string;
  /** The body is sealed (every answer a worker publishes is): Redis holds no secret, even in passing. */
  sealed?: true;
  /**
   * The answer is an object another request made before (its key's durable record,
   * found because Redis no longer knew the key): sent with `Idempotent-Replayed: true`.
   */
  replayed?: boolean;
  /**
   * The request the job was made for. Another request waiting on the same keyed job
   * (its key's first job, still queued or run again after Redis lost its answer)
   * gets the answer as a replay.
   */
  requestId?: string;
  /**
   * A keyed answer the worker recorded (the key's result until it expires): the
   * key's expiry, epoch ms. Absent on refusals, which leave the key free to retry.
   */
  expiresAt?: number;
}

/**
 * Everything a dispatch needs, so it reads no event from MongoDB (the outbox is
 * only read by its sweeper). v2: v1 carried the event id alone.
 */
export interface DispatchEventData {
  eventId: string;
  project: string;
  livemode: boolean;
  type: string;
  /** Epoch ms when the event was recorded: endpoints created later do not receive it. */
  createdMs: number;
}

/**
 * Ids only: the delivery loads the event from MongoDB and sends it only to an
 * endpoint of the event's own scope, so a job added by hand (the dashboard, Redis)
 * cannot make a receiver get bytes the service did not record. The attempt number
 * is BullMQ's (`attemptsMade`).
 */
export interface DeliverWebhookData {
  eventId: string;
  endpointId: string;
  /**
   * A chain asked for by `resend` or `recover`, besides the event's own: it does
   * not count toward the event's pending deliveries (its outbox entry).
   */
  redelivery?: true;
  /**
   * Attempts of the chain made before its job (the first, made in place by the job
   * that recorded the event: worker/webhooks/first-attempt.ts). Numbers the job's
   * attempts and places them on the retry schedule.
   */
  prior?: number;
}

/** Every job of every queue: its data and what its processor returns. */
export interface QueueJobs {
  writes: {
    [JOBS.createPaymentIntent]: { data: CreatePaymentIntentData; result: WriteJobResult };
    [JOBS.createWebhookEndpoint]: { data: CreateWebhookEndpointData; result: WriteJobResult };
    [JOBS.confirmPaymentIntent]: { data: ConfirmPaymentIntentData; result: WriteJobResult };
    [JOBS.cancelPaymentIntent]: { data: CancelPaymentIntentData; result: WriteJobResult };
    [JOBS.updatePaymentIntent]: { data: UpdatePaymentIntentData; result: WriteJobResult };
    [JOBS.updateWebhookEndpoint]: { data: UpdateWebhookEndpointData; result: WriteJobResult };
    [JOBS.deleteWebhookEndpoint]: { data: WebhookEndpointMutationData; result: WriteJobResult };
    [JOBS.rotateWebhookSecret]: { data: RotateWebhookSecretData; result: WriteJobResult };
    [JOBS.resendWebhookEvent]: { data: ResendWebhookEventData; result: WriteJobResult };
    [JOBS.recoverWebhookEvents]: { data: RecoverWebhookEventsData; result: WriteJobResult };
    [JOBS.createRefund]: { data: CreateRefundData; result: WriteJobResult };
    [JOBS.updateRefund]: { data: UpdateRefundData; result: WriteJobResult };
    [JOBS.createPayout]: { data: CreatePayoutData; result: WriteJobResult };
    [JOBS.createPayoutBatch]: { data: CreatePayoutBatchData; result: WriteJobResult };
    [JOBS.cancelPayout]: { data: CancelPayoutData; result: WriteJobResult };
  };
  intents: {
    [JOBS.operatorOutcome]: { data: OperatorOutcomeData; result: TransitionJobResult };
    [JOBS.operatorCheck]: { data: OperatorCheckData; result: { status: string | null; answer?: string } };
    [JOBS.expirePaymentIntent]: { data: ExpirePaymentIntentData; result: TransitionJobResult };
    [JOBS.processRefund]: { data: ProcessRefundData; result: { status: string } };
    [JOBS.processPayout]: { data: ProcessPayoutData; result: { status: string } };
    [JOBS.checkPayoutBatch]: { data: CheckPayoutBatchData; result: { status: string } };
  };
  events: {
    [JOBS.dispatchEvent]: { data: DispatchEventData; result: { deliveries: number } };
  };
  webhooks: {
    [JOBS.deliverWebhook]: { data: DeliverWebhookData; result: unknown };
    /**
     * An endpoint's test call: answered like a mutation (the api waits for it), but
     * made by the delivery machinery, never by the writes queue, which every
     * tenant's creates and mutations share (security review H1).
     */
    [JOBS.testWebhookEndpoint]: { data: WebhookEndpointMutationData; result: WriteJobResult };
  };
  maintenance: {
    [JOBS.sweepIdempotency]: { data: Record<string, never>; result: { freed: number } };
    [JOBS.sweepEvents]: { data: Record<string, never>; result: { pending: number; requeued: number; released: number; complete: boolean } };
    /** `recentMs`: also record the events of the transitions made that long before (a reconnect's sweeps, worker/schedules.ts). */
    [JOBS.sweepIntents]: { data: { recentMs?: number }; result: { intents: number; complete: boolean; recorded?: number } };
    /** `graceMs`: how old a pending refund must be to be re-driven; absent, the sweep interval (worker/schedules.ts). */
    [JOBS.sweepRefunds]: { data: { graceMs?: number }; result: { refunds: number; rebuilt: number; visited: number; complete: boolean; ledger?: { balances: number } } };
    /** An adjustment of a balance through the admin API (api/routes/admin-adjustments.ts): posted once per reference. */
    [JOBS.adjustBalance]: { data: AdjustmentData; result: { txn: string } };
    /** One pass of the retention sweeper (worker/processors/sweep-retention.ts); `done: false` when its time ran out first. */
    [JOBS.sweepRetention]: { data: Record<string, never>; result: RetentionPass };
    /** Live mode: one call to each account whose breaker is open (common/operator-breaker.ts). */
    [JOBS.probeOperators]: { data: Record<string, never>; result: { probed: number; closed: number } };
    /** Unfinished payouts whose step was lost with Redis (worker/payouts/sweep.ts). */
    /** `stranded`: holds checked and released as never made (worker/payouts/stranded.ts); null when another worker's check is recent. */
    [JOBS.sweepPayouts]: { data: Record<string, never>; result: { payouts: number; requeued: number; stranded: { checked: number; released: number } | null } };
    /** Reconciliation of one live account (its id), or of the simulator (`account: null`): worker/reconcile/run.ts. */
    [JOBS.reconcileOperator]: { data: { account: string | null }; result: ReconcileResult };
  };
}

export type JobName<Q extends QueueName> = keyof QueueJobs[Q] & string;
type Spec<Q extends QueueName, N extends JobName<Q>> = QueueJobs[Q][N] extends { data: infer D; result: infer R } ? { data: D; result: R } : never;
export type JobData<Q extends QueueName, N extends JobName<Q>> = Spec<Q, N>['data'];
export type JobResult<Q extends QueueName, N extends JobName<Q>> = Spec<Q, N>['result'];

/** A job of queue `Q`: a union discriminated by `name`. */
export type AnyJob<Q extends QueueName> = { [N in JobName<Q>]: Job<JobData<Q, N>, JobResult<Q, N>, N> }[JobName<Q>];

/** A BullMQ queue whose `add` and `addBulk` accept only this queue's jobs, each with its own data. */
export type TypedQueue<Q extends QueueName> = Queue<unknown, unknown, never> & {
  add<N extends JobName<Q>>(name: N, data: JobData<Q, N>, opts?: JobsOptions): Promise<Job>;
  addBulk(jobs: Array<{ [N in JobName<Q>]: { name: N; data: JobData<Q, N>; opts?: JobsOptions } }[JobName<Q>]>): Promise<Job[]>;
  upsertJobScheduler<N extends JobName<Q>>(
    schedulerId: string,
    repeat: RepeatOptions,
    template: { name: N; data: JobData<Q, N>; opts?: JobSchedulerTemplateOptions },
  ): Promise<Job>;
};

export type Queues = { [Q in QueueName]: TypedQueue<Q> };

/** The jobs an api request enqueues and waits for: every job of `creates`, and the endpoint test. */
export type RequestJobs = QueueJobs['writes'] & Pick<QueueJobs['webhooks'], typeof JOBS.testWebhookEndpoint>;
export type RequestJobName = keyof RequestJobs & string;
export type RequestJobData<N extends RequestJobName> = RequestJobs[N]['data'];

/** The queue a request's job goes to. */
export function requestQueue(name: RequestJobName): 'writes' | 'webhooks' {
  return name === JOBS.testWebhookEndpoint ? QUEUES.webhooks : QUEUES.writes;
}

/**
 * Queue `name` under `layout` (common/queue-shards.ts): its hash-tagged name on a
 * cluster, its shards with `QUEUE_SHARDS`; the plain queue by default.
 */
export function openQueue<Q extends QueueName>(name: Q, options: QueueOptions, layout: QueueLayout = PLAIN_LAYOUT): TypedQueue<Q> {
  return openLayoutQueue(name, options, layout, (shard, opts) => new Queue(shard, opts));
}

/** Every queue of the service, on one connection. */
export function openQueues(options: QueueOptions, layout: QueueLayout = PLAIN_LAYOUT): Queues {
  return {
    writes: openQueue(QUEUES.writes, options, layout),
    events: openQueue(QUEUES.events, options, layout),
    intents: openQueue(QUEUES.intents, options, layout),
    webhooks: openQueue(QUEUES.webhooks, options, layout),
    maintenance: openQueue(QUEUES.maintenance, options, layout),
  };
}

/**
 * A worker for queue `Q`, one per shard of it under `layout`. The processor sees the
 * discriminated union of the queue's jobs, so each `case` of its `switch (job.name)`
 * must be a name of this queue and narrows `job.data`; its `default` returns
 * `unknownJob(job)`.
 */
export function startTypedWorkers<Q extends QueueName>(
  name: Q,
  /** `token` is the worker's lock on the job (for `moveToDelayed`). */
  processor: (job: AnyJob<Q>, token?: string) => Promise<unknown>,
  options: WorkerOptions,
  layout: QueueLayout = PLAIN_LAYOUT,
): Worker[] {
  const make = typedWorkerMaker(processor, options);
  return queueNames(name, layout).map((shard) => make(shard));
}

const inFlight = new WeakMap<Worker, { jobs: number }>();

/** How many jobs a worker made here is running (its processor called and not returned). */
export function jobsInFlight(worker: Worker): number {
  return inFlight.get(worker)?.jobs ?? 0;
}

/** Makes the worker of one shard (by its name) of a queue: startTypedWorkers', and a replacement's (worker/wedged-workers.ts). */
export function typedWorkerMaker<Q extends QueueName>(processor: (job: AnyJob<Q>, token?: string) => Promise<unknown>, options: WorkerOptions): (shard: string) => Worker {
  return (shard) => {
    const count = { jobs: 0 };
    const worker = new Worker(
      shard,
      async (job: Job, token?: string) => {
        count.jobs++;
        try {
          return await processor(job as AnyJob<Q>, token);
        } finally {
          count.jobs--;
        }
      },
      options,
    );
    inFlight.set(worker, count);
    return worker;
  };
}

/** An unknown job name is permanent: the job fails at once, never retried. */
export function unknownJob(job: Pick<Job, 'name' | 'queueName'>): never {
  throw new UnrecoverableError(`unknown job ${job.name} on queue ${job.queueName}`);
}

/** Redis pub/sub channel on which workers publish create results to every api process. */
export function resultsChannel(prefix: string): string {
  return `${prefix}:create-results`;
}

/** Redis pub/sub channel on which a key revocation is pushed to every api process. */
export function revocationsChannel(prefix: string): string {
  return `${prefix}:api-key-revocations`;
}

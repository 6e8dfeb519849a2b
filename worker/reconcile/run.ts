/**
 * The reconciliation job (DESIGN section 16): per live operator account, and for the
 * test-mode simulator, every `RECONCILE_INTERVAL_MS`. It reads the operator's record
 * of the last 48 hours and compares it with ours (./compare.ts):
 *
 * - the operator's transaction list where it has one (Wave's Balance API,
 *   ./wave-transactions.ts; the simulator's own list, ./simulator.ts);
 * - a status lookup (the connector's `outcome`) of each attempt of this account that
 *   ended without a success within the window and that the operator had been asked
 *   for (intents in `new`, `canceled` or `expired`).
 *
 * A payment the operator took that the service does not show as succeeded becomes
 * an `operator_discrepancy`, exactly once per operator transaction: its key (account
 * and attempt) is claimed first in `discrepancy_keys` (`_id`), so two runs at once,
 * or a run after a crash, find the same discrepancy and finish it; every later step
 * is idempotent (its event's identity, the intent's transition named after the
 * discrepancy, the refund's id chosen with it). Then, on an intent that can still
 * take it, the payment is applied through the lifecycle's transition (the intent
 * succeeds, its event and whatever follows a success with it); on a final intent it
 * is refunded through the operator, `reason: "late_payment"`, by the refunds' own
 * steps (worker/refunds/).
 */
import type { PaymentIntentDoc } from '../../common/documents.js';
import { idTime } from '../../common/ids.js';
import { OperatorUnavailableError } from '../../common/infra-errors.js';
import { discrepancyKey, presentOperatorDiscrepancy, type OperatorDiscrepancyDoc, type ReconcileResult } from '../../common/operator-discrepancies.js';
import { isDuplicateKey } from '../../common/mongo.js';
import { refundSupport } from '../../common/refund-support.js';
import { transition } from '../lifecycle/transition.js';
import { OperatorRequestError } from '../operators/connector.js';
import type { LifecycleDeps } from '../processors/payment-intent-lifecycle.js';
import { postLatePayment } from '../balance/postings.js';
import { holdLateRefund } from '../refunds/ledger.js';
import { scheduleRefundStep, type ProcessDeps } from '../refunds/process.js';
import { ensureRefundDoc, recordCreated, recordEvent } from '../refunds/record.js';
import { decideLatePayment, decideResolution, shownAsSucceeded, type OperatorPayment } from './compare.js';
import { wavePayments } from './wave-transactions.js';

/** How far back the operator's record is read. */
export const RECONCILE_WINDOW_MS = 48 * 3600_000;

/** At most this many attempts are looked up, and payments compared, per run (the next run goes on). */
export const RECONCILE_MAX_PER_RUN = 1000;

export type ReconcileDeps = LifecycleDeps & ProcessDeps & { operatorTimeoutMs: number };


/** Reconciles one live account (its id), or the simulator (`null`). */
export async function reconcile(deps: ReconcileDeps, account: string | null): Promise<ReconcileResult> {
  const nowMs = deps.now();
  const sinceMs = nowMs - RECONCILE_WINDOW_MS;
  const result: ReconcileResult = { compared: 0, lookedUp: 0, recorded: 0, applied: 0, refunded: 0, pending: 0 };
  let payments: OperatorPayment[];
  try {
    payments = account === null ? await simulatorPayments(deps, sinceMs) : await livePayments(deps, account, sinceMs, nowMs, result);
  } catch (err) {
    if (!(err instanceof OperatorUnavailableError) && !(err instanceof OperatorRequestError)) throw err;
    deps.logger.warn({ account, err: err.message }, 'reconciliation: the operator\'s record could not be read; the next run tries again');
    return { ...result, unavailable: err.message };
  }
  const seen = new Set<string>();
  for (const payment of payments) {
    const key = discrepancyKey(account !== null, account, `${payment.paymentIntent}:${payment.attempt}`);
    if (seen.has(key)) continue;
    seen.add(key);
    result.compared++;
    const outcome = await settle(deps, payment, key, account !== null);
    if (outcome === 'none') continue;
    if (outcome.recorded) result.recorded++;
    if (outcome.resolution === 'payment_applied') result.applied++;
    else if (outcome.resolution === 'refunded') result.refunded++;
    else result.pending++;
  }
  if (result.recorded > 0) deps.logger.warn({ account: account ?? 'simulator', ...result }, 'reconciliation found payments the service did not show');
  return result;
}

async function simulatorPayments(deps: ReconcileDeps, sinceMs: number): Promise<OperatorPayment[]> {
  const docs = await deps.collections.simulatorPayments.find({ paid_ms: { $gte: sinceMs } }).sort({ paid_ms: 1 }).limit(RECONCILE_MAX_PER_RUN).toArray();
  return docs.map((doc) => ({
    paymentIntent: doc.payment_intent,
    attempt: doc.attempt,
    operator: doc.operator,
    account: null,
    reference: `sim_${doc._id}`,
    foundBy: 'transaction_list' as const,
    phoneMasked: doc.phone_masked,
  }));
}

/** The account's transaction list (Wave), then a status lookup of each attempt the list did not show. */
async function livePayments(deps: ReconcileDeps, accountId: string, sinceMs: number, nowMs: number, result: ReconcileResult): Promise<OperatorPayment[]> {
  const account = deps.connectors.accounts.find((a) => a.id === accountId);
  const connector = deps.connectors.byId(accountId);
  if (!account || !connector) return [];
  const listed = account.operator === 'wave' ? await wavePayments(account.config as { baseUrl: string; apiKey: string; webhookSecret: string }, accountId, sinceMs, nowMs, deps.operatorTimeoutMs) : [];
  const known = new Set(listed.map((p) => `${p.paymentIntent}:${p.attempt}`));
  const found = [...listed];
  // Attempts of this account that ended without a success in the window (index `changed_ms` on MongoDB).
  const ended = await deps.collections.paymentIntents
    .find(
      { changed_ms: { $gte: sinceMs }, livemode: true, status: { $in: ['new', 'canceled', 'expired'] }, 'payment.operator': account.operator },
      { projection: { _id: 1, attempt: 1, payment: 1, project: 1, livemode: 1 } },
    )
    .limit(RECONCILE_MAX_PER_RUN)
    .toArray();
  for (const intent of ended) {
    const payment = intent.payment;
    const attempt = intent.attempt ?? 0;
    if (!payment || attempt === 0 || !(payment.requested || payment.requesting_since)) continue;
    if ((payment.account ?? account.id) !== account.id || known.has(`${intent._id}:${attempt}`)) continue;
    result.lookedUp++;
    const answer = await connector.outcome(`${intent._id}:${attempt}`, payment.operator_reference ?? undefined);
    if (answer.kind !== 'succeeded') continue;
    found.push({
      paymentIntent: intent._id,
      attempt,
      operator: account.operator,
      account: account.id,
      reference: answer.operatorReference ?? payment.operator_reference ?? null,
      foundBy: 'status_lookup',
      phoneMasked: payment.phone_masked,
    });
  }
  return found;
}

type Settled = 'none' | { recorded: boolean; resolution: OperatorDiscrepancyDoc['resolution'] };

/** Compares one payment with the intent, and records and resolves a discrepancy once. */
async function settle(deps: ReconcileDeps, payment: OperatorPayment, key: string, livemode: boolean): Promise<Settled> {
  const c = deps.collections;
  const intent = await c.paymentIntents.findOne({ _id: payment.paymentIntent }, { projection: { history: 0, created_event: 0 } });
  if (!intent || intent.livemode !== livemode) return 'none';
  const claim = await c.discrepancyKeys.findOne({ _id: key });
  let doc: OperatorDiscrepancyDoc | null = claim ? await c.operatorDiscrepancies.findOne({ _id: claim.discrepancy }) : null;
  if (doc && doc.resolution !== 'pending') return { recorded: false, resolution: doc.resolution };
  if (!claim && shownAsSucceeded(intent, payment.attempt)) return 'none';
  let recorded = false;
  if (!doc) {
    const id = claim?.discrepancy ?? (await claimKey(deps, key));
    ({ doc, recorded } = await ensureDiscrepancy(deps, id, key, intent, payment));
  }
  await recordEvent(deps, { project: doc.project, livemode: doc.livemode }, {
    id: doc.event_id,
    type: 'operator_discrepancy.created',
    objectId: doc._id,
    object: () => presentOperatorDiscrepancy({ ...doc, resolution: 'pending' }),
    key: `${doc._id}:operator_discrepancy.created`,
  });
  const resolution = await resolve(deps, doc, payment);
  if (resolution !== 'pending') await c.operatorDiscrepancies.updateOne({ _id: doc._id }, { $set: { resolution } });
  return { recorded, resolution };
}

/** The discrepancy id of `key`: this run's, when it claims the key first, else the first claimer's. */
async function claimKey(deps: ReconcileDeps, key: string): Promise<string> {
  const id = deps.ids.next('operator_discrepancy');
  try {
    await deps.collections.discrepancyKeys.insertOne({ _id: key, discrepancy: id });
    return id;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const claimed = await deps.collections.discrepancyKeys.findOne({ _id: key });
  if (!claimed) throw new Error(`discrepancy key ${key}: duplicate, yet not found`);
  return claimed.discrepancy;
}

async function ensureDiscrepancy(deps: ReconcileDeps, id: string, key: string, intent: PaymentIntentDoc, payment: OperatorPayment): Promise<{ doc: OperatorDiscrepancyDoc; recorded: boolean }> {
  const doc: OperatorDiscrepancyDoc = {
    _id: id,
    project: intent.project,
    livemode: intent.livemode,
    key,
    operator: payment.operator,
    account: payment.account,
    payment_intent: intent._id,
    attempt: payment.attempt,
    amount: intent.amount,
    currency: intent.currency,
    operator_reference: payment.reference,
    found_by: payment.foundBy,
    intent_status: intent.status,
    resolution: 'pending',
    refund_id: deps.ids.next('refund'),
    event_id: deps.ids.next('event'),
    created: Math.floor(idTime(id) / 1000),
  };
  try {
    await deps.collections.operatorDiscrepancies.insertOne(doc);
    return { doc, recorded: true };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const stored = await deps.collections.operatorDiscrepancies.findOne({ _id: id });
  if (!stored) throw new Error(`discrepancy ${id}: duplicate, yet not found`);
  return { doc: stored, recorded: false };
}

/** Applies the payment, or refunds it, or leaves it for later; answers what became of it. */
async function resolve(deps: ReconcileDeps, doc: OperatorDiscrepancyDoc, payment: OperatorPayment): Promise<OperatorDiscrepancyDoc['resolution']> {
  const scope = { project: doc.project, livemode: doc.livemode };
  const intent = await deps.collections.paymentIntents.findOne({ _id: doc.payment_intent }, { projection: { history: 0, created_event: 0 } });
  if (!intent) return 'pending';
  // Shown now: applied by an earlier run of this discrepancy (whose transition is
  // finished again: its event recorded once), or by the operator's own answer since.
  if (shownAsSucceeded(intent, doc.attempt)) {
    await applyPayment(deps, doc, payment);
    return 'payment_applied';
  }
  const refunds = refundSupport(doc.operator) !== 'none' && (!doc.livemode || deps.connectors.get(doc.operator, doc.account) !== undefined);
  const nowS = Math.floor(deps.now() / 1000);
  const resolution = (intent.refunds ?? []).some((e) => e.id === doc.refund_id) ? { kind: 'refund' as const } : decideResolution(intent, payment, refunds, nowS);
  switch (resolution.kind) {
    case 'wait':
      return 'pending';
    case 'manual':
      deps.logger.warn({ discrepancy: doc._id, payment_intent: doc.payment_intent, operator: doc.operator }, `reconciliation: a late payment cannot be refunded here (${resolution.reason}); the merchant must`);
      return 'manual';
    case 'apply':
      return (await applyPayment(deps, doc, payment)) ? 'payment_applied' : 'pending';
    case 'refund': {
      // The money came in before it goes back: the ledger shows both (../balance/postings.ts).
      if (deps.postings) await postLatePayment(deps.postings, intent, { discrepancy: doc._id, amount: doc.amount, operator: doc.operator });
      const held = await holdLateRefund(deps, {
        target: doc.payment_intent,
        scope,
        m: `recon:${doc._id}`,
        refundId: doc.refund_id,
        created: nowS,
        amount: doc.amount,
        late: { attempt: doc.attempt, operator: doc.operator, account: doc.account, reference: doc.operator_reference, phone_masked: payment.phoneMasked ?? null },
      });
      if (!held) return 'pending';
      const refund = await ensureRefundDoc(deps, held.doc, held.entry, { description: `Late payment of attempt ${doc.attempt} (${doc._id}), given back.`, metadata: [] });
      await recordCreated(deps, refund, held.entry);
      if (refund.polls === 0) await scheduleRefundStep(deps.intentsQueue, refund, 0, 0);
      return 'refunded';
    }
  }
}

/** The intent succeeds with the late payment, through the lifecycle's transition (named after the discrepancy: applied once). */
async function applyPayment(deps: ReconcileDeps, doc: OperatorDiscrepancyDoc, payment: OperatorPayment): Promise<boolean> {
  const result = await transition(
    deps,
    { target: doc.payment_intent, id: `recon:${doc._id}`, project: doc.project, livemode: doc.livemode, requestId: '', baseUrl: '' },
    (current) => decideLatePayment(current, payment, Math.floor(deps.now() / 1000)),
  );
  return result.kind === 'applied';
}

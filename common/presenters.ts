/**
 * Presenters turn storage documents into the public JSON shapes. They decide what
 * leaves the service: storage-only fields never do, and secrets only where asked.
 */
import { fromPairs } from './metadata.js';
import type { ApiKeyDoc, BalanceDoc, BalanceTransactionDoc, PaymentIntentDoc, RefundDoc, WebhookAttemptDoc, WebhookEndpointDoc } from './documents.js';
import { NO_OPERATOR, REPORTING_CATEGORIES } from './ledger.js';
import { maskPhone } from './lifecycle.js';
import type { NumberResolution, OperatorEntry } from './operator-catalog.js';
import type { OperatorStatus } from './operator-status.js';

/**
 * A payment intent as a secret key reads it: create, retrieve, list and events all
 * carry `client_secret`, as the seed's field list and Stripe do. `withSecret: false`
 * is for a reader without the secret key.
 */
export function presentPaymentIntent(doc: Omit<PaymentIntentDoc, 'created_event' | 'history' | 'refunds'>, options: { withSecret?: boolean } = {}) {
  return {
    id: doc._id,
    object: 'payment_intent' as const,
    amount: doc.amount,
    amount_received: doc.status === 'succeeded' ? doc.amount : 0,
    amount_refunded: doc.amount_refunded ?? 0,
    currency: doc.currency,
    description: doc.description,
    status: doc.status,
    ...(options.withSecret === false ? {} : { client_secret: doc.client_secret }),
    automatic_operator: doc.automatic_operator,
    allowed_operators: doc.allowed_operators,
    selected_operator: doc.selected_operator,
    next_action: doc.next_action ?? null,
    last_payment_error: doc.last_payment_error ?? null,
    payment_details: doc.payment ? { operator: doc.payment.operator, phone_number: doc.payment.phone_masked } : null,
    canceled_at: doc.canceled_at ?? null,
    cancellation_reason: doc.cancellation_reason ?? null,
    metadata: fromPairs(doc.metadata),
    livemode: doc.livemode,
    created: doc.created,
    expires_at: doc.expires_at,
  };
}

/** A refund: every field is public (the operator's reference and the bookkeeping stay stored). */
export function presentRefund(doc: Omit<RefundDoc, 'answer' | 'requested' | 'operator_reference' | 'polls'>) {
  return {
    id: doc._id,
    object: 'refund' as const,
    amount: doc.amount,
    currency: doc.currency,
    payment_intent: doc.payment_intent,
    status: doc.status,
    reason: doc.reason,
    failure_reason: doc.failure_reason,
    description: doc.description,
    metadata: fromPairs(doc.metadata),
    operator: doc.operator,
    created: doc.created,
    livemode: doc.livemode,
  };
}

/** A balance transaction (DESIGN section 16), Stripe's shape with `operator` and `balance_after`. */
export function presentBalanceTransaction(doc: BalanceTransactionDoc) {
  return {
    id: doc._id,
    object: 'balance_transaction' as const,
    amount: doc.amount,
    currency: doc.currency,
    fee: doc.fee,
    net: doc.net,
    type: doc.type,
    source: doc.source,
    operator: doc.operator,
    description: doc.description,
    status: 'available' as const,
    created: doc.created,
    available_on: doc.created,
    reporting_category: REPORTING_CATEGORIES[doc.type],
    balance_after: doc.balance_after,
    livemode: doc.livemode,
  };
}

/**
 * A scope's balance, Stripe's shape: one entry per currency in `available` (every
 * posting is available at once) and in `pending` (always 0), with `by_operator`
 * beside them: where the available money sits.
 */
export function presentBalance(docs: readonly BalanceDoc[], livemode: boolean) {
  const sorted = [...docs].sort((a, b) => a.currency.localeCompare(b.currency));
  return {
    object: 'balance' as const,
    available: sorted.map((d) => ({ amount: d.available, currency: d.currency, source_types: { mobile_money: d.available } })),
    pending: sorted.map((d) => ({ amount: 0, currency: d.currency, source_types: { mobile_money: 0 } })),
    by_operator: sorted.flatMap((d) =>
      Object.entries(d.by_operator)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([operator, amount]) => ({ operator: operator === NO_OPERATOR ? null : operator, amount, currency: d.currency })),
    ),
    livemode,
  };
}

/** `secret` only in the create response (and its idempotent replays). */
export function presentWebhookEndpoint(doc: WebhookEndpointDoc, options: { withSecret: boolean }) {
  return {
    id: doc._id,
    object: 'webhook_endpoint' as const,
    url: doc.url,
    enabled_events: doc.enabled_events,
    description: doc.description,
    metadata: fromPairs(doc.metadata),
    status: doc.status,
    livemode: doc.livemode,
    created: doc.created,
    ...(options.withSecret ? { secret: doc.secret } : {}),
  };
}

export function buildEventJson(event: {
  id: string;
  type: string;
  created: number;
  livemode: boolean;
  object: unknown;
}): string {
  return JSON.stringify({
    id: event.id,
    object: 'event',
    type: event.type,
    created: event.created,
    livemode: event.livemode,
    data: { object: event.object },
  });
}

export function presentApiKey(doc: ApiKeyDoc, secret?: string) {
  return {
    id: doc._id,
    object: 'api_key' as const,
    project: doc.project,
    livemode: doc.livemode,
    created: doc.created,
    last4: doc.last4,
    revoked_at: doc.revoked_at,
    ...(secret === undefined ? {} : { secret }),
  };
}

export function presentWebhookAttempt(doc: WebhookAttemptDoc) {
  return {
    id: doc._id,
    object: 'webhook_attempt' as const,
    webhook_endpoint: doc.endpoint_id,
    event: doc.event_id,
    attempt: doc.attempt,
    created: doc.created,
    duration_ms: doc.duration_ms,
    succeeded: doc.succeeded,
    http_status: doc.http_status,
    error: doc.error,
    response_body: doc.response_body,
    livemode: doc.livemode,
  };
}

/** An operator of the catalog as `GET /v1/operators` shows it. */
/** A live operator account as `GET /v1/operators` shows it: no credential, its breaker's state. */
export interface PresentedAccount {
  id: string;
  countries: string[];
  sandbox: boolean;
  status: 'operational' | 'unavailable';
}

export function presentOperator(entry: OperatorEntry, options: { status: OperatorStatus; livemode: boolean; accounts?: PresentedAccount[] }) {
  const accounts = options.accounts ?? [];
  return {
    object: 'operator' as const,
    id: entry.id,
    name: entry.name,
    countries: entry.countries.map((terms) => ({
      country: terms.country,
      calling_code: terms.callingCode,
      currencies: [...terms.currencies],
      min_amount: terms.minAmount,
      max_amount: terms.maxAmount,
      // Live mode: the account that serves this country, or null (a confirm there is `operator_not_configured`).
      account: options.livemode ? (accounts.find((a) => a.countries.includes(terms.country))?.id ?? null) : null,
    })),
    flow: entry.flow,
    refunds: entry.refunds,
    status: options.status,
    accounts: options.livemode ? accounts : [],
    livemode: options.livemode,
  };
}

/** `GET /v1/operators/resolve`: the number masked, as everywhere it is shown. */
export function presentResolution(phone: string, resolution: NumberResolution) {
  return {
    object: 'operator_resolution' as const,
    phone_number: maskPhone(phone),
    country: resolution.country?.code ?? null,
    operator: resolution.operator,
    candidates: resolution.candidates,
  };
}

/** The list envelope, assembled from the JSON of each item. */
export function listEnvelopeJson(url: string, items: string[], hasMore: boolean): string {
  return `{"object":"list","url":${JSON.stringify(url)},"has_more":${hasMore},"data":[${items.join(',')}]}`;
}

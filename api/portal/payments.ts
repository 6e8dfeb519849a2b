/** Payments and refunds: the list with its filters and search, a payment with its timeline, attempts and refunds, and the Refund action. */
import { currencyExponent, formatAmount } from '../../common/money.js';
import { badge, esc, money, page, table, when, writeForm, type Notice } from './html.js';
import { errorPage, type PortalAnswer, type PortalRequest, type PortalRoutes } from './router.js';

const STATUSES = ['new', 'requires_action', 'processing', 'succeeded', 'canceled', 'expired'];
const quote = (value: string) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

/** Unix seconds of a `YYYY-MM-DD` day's start (UTC), or null. */
function dayStart(text: string | null): number | null {
  if (!text || !/^\d{4}-\d{2}-\d{2}$/.test(text)) return null;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) ? null : ms / 1000;
}

/** The search query of the filters, or null for the plain list; a string is a mistake to show. */
export function paymentsQuery(params: URLSearchParams): { query: string | null; redirect?: string; error?: string } {
  const clauses: string[] = [];
  const status = params.get('status') ?? '';
  if (STATUSES.includes(status)) clauses.push(`status:${quote(status)}`);
  const from = dayStart(params.get('from'));
  const to = dayStart(params.get('to'));
  if (from !== null) clauses.push(`created>=${from}`);
  if (to !== null) clauses.push(`created<${to + 86_400}`);
  const q = (params.get('q') ?? '').trim();
  if (q !== '') {
    const pair = /^([^=:]{1,40})[=:](.{1,500})$/.exec(q);
    if (/^pi_[0-9A-Za-z]+$/.test(q)) return { query: null, redirect: `/portal/payments/${q}` };
    if (/^\d{4}$/.test(q)) clauses.push(`phone_last4:${quote(q)}`);
    else if (pair) clauses.push(`metadata[${quote(pair[1]!.trim())}]:${quote(pair[2]!.trim())}`);
    else return { query: null, error: 'Search by a payment id (pi_…), the last four digits of a phone number (4321), or a metadata pair (order_id=A-77).' };
  }
  return { query: clauses.length > 0 ? clauses.join(' AND ') : null };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- /v1 JSON
type Json = any;

function paymentRow(pi: Json): string[] {
  return [
    `<a class="id" href="/portal/payments/${esc(pi.id)}">${esc(pi.id)}</a>`,
    money(pi.amount, pi.currency),
    badge(pi.status),
    esc(pi.payment_details?.phone_number ?? ''),
    esc(pi.payment_details?.operator ?? ''),
    esc(Object.entries(pi.metadata ?? {}).map(([k, v]) => `${k}=${v}`).join(', ')),
    when(pi.created),
  ];
}

async function paymentsPage(req: PortalRequest, notice: Notice = {}): Promise<PortalAnswer> {
  const filters = paymentsQuery(req.query);
  if (filters.redirect) return { redirect: filters.redirect };
  const after = req.query.get('after');
  const cursor = after && /^pi_[0-9A-Za-z]+$/.test(after) ? after : null;
  const res =
    filters.query === null
      ? await req.v1.get('/v1/payment_intents', { limit: 25, starting_after: cursor })
      : await req.v1.get('/v1/payment_intents/search', { query: filters.query, limit: 25, page: cursor });
  const error = filters.error ?? res.error;
  const data: Json[] = res.status === 200 ? res.body.data : [];
  const value = (name: string) => esc(req.query.get(name) ?? '');
  const status = req.query.get('status') ?? '';
  const form = `<form method="get" action="/portal/payments" class="filters">
<label>Search<input name="q" id="q" value="${value('q')}" placeholder="pi_…, 4321, order_id=A-77"></label>
<label>Status<select name="status" id="status"><option value="">any</option>${STATUSES.map((s) => `<option${s === status ? ' selected' : ''}>${s}</option>`).join('')}</select></label>
<label>From<input type="date" name="from" value="${value('from')}"></label><label>To<input type="date" name="to" value="${value('to')}"></label>
<button type="submit" id="find">Find</button> <a href="/portal/payments">Clear</a></form>`;
  const last = data[data.length - 1];
  const more = res.status === 200 && res.body.has_more && last ? (() => {
    const next = new URLSearchParams(req.query);
    next.set('after', last.id);
    return `<div class="pager"><a href="/portal/payments?${esc(next.toString())}" id="next">Older →</a></div>`;
  })() : '';
  const rows = table(['Payment', 'Amount', 'Status', 'Phone', 'Operator', 'Metadata', 'Created'], data.map(paymentRow), filters.query ? 'No payment matches.' : 'No payments yet.');
  return { html: page('Payments', `${form}${rows}${more}`, { frame: req.frame, active: '/portal/payments', notice: { ...notice, error: notice.error ?? error } }) };
}

/** Minor units from what a person typed in major units (`12.50` KES → 1250); null when it is not an amount. */
export function minorUnits(text: string, currency: string): number | null {
  const exponent = currencyExponent(currency);
  const match = new RegExp(`^(\\d{1,12})(?:[.,](\\d{1,${Math.max(exponent, 1)}}))?$`).exec(text.replaceAll(' ', ''));
  if (!match || (exponent === 0 && match[2] !== undefined)) return null;
  const minor = Number(match[1]) * 10 ** exponent + Number((match[2] ?? '').padEnd(exponent, '0') || '0');
  return Number.isSafeInteger(minor) ? minor : null;
}

function eventLine(e: Json): string {
  const obj = e.data?.object ?? {};
  const detail =
    obj.object === 'refund'
      ? `${esc(obj.id)} · ${money(obj.amount, obj.currency)}${obj.failure_reason ? ` · ${esc(obj.failure_reason)}` : ''}`
      : obj.last_payment_error
        ? esc(obj.last_payment_error.operator_decline_code ?? obj.last_payment_error.code ?? '')
        : '';
  return `<li>${when(e.created)} <strong>${esc(e.type)}</strong> ${detail} <a class="id" href="/portal/events/${esc(e.id)}">${esc(e.id)}</a></li>`;
}

async function paymentPage(req: PortalRequest, notice: Notice = {}): Promise<PortalAnswer> {
  const id = req.params.id as string;
  const res = await req.v1.get(`/v1/payment_intents/${encodeURIComponent(id)}`);
  if (res.status !== 200) return errorPage(req, 'Payment', '/portal/payments', { error: res.error }, res.status === 404 ? 404 : 200);
  const pi = res.body;
  const [events, refunds] = await Promise.all([req.v1.get('/v1/events', { object: id, limit: 100 }), req.v1.get('/v1/refunds', { payment_intent: id, limit: 100 })]);
  const refundList: Json[] = refunds.status === 200 ? refunds.body.data : [];
  const refundEvents = await Promise.all(refundList.slice(0, 10).map((r) => req.v1.get('/v1/events', { object: r.id, limit: 20 })));
  const all: Json[] = [...(events.status === 200 ? events.body.data : []), ...refundEvents.flatMap((r) => (r.status === 200 ? r.body.data : []))];
  all.sort((a, b) => (a.id.slice(a.id.indexOf('_')) < b.id.slice(b.id.indexOf('_')) ? -1 : 1));
  const attempts = all.filter((e) => ['payment_intent.requires_action', 'payment_intent.processing', 'payment_intent.payment_failed', 'payment_intent.succeeded'].includes(e.type));
  const facts = `<dl class="facts"><dt>Id</dt><dd class="id" id="payment-id">${esc(pi.id)}</dd><dt>Amount</dt><dd id="amount">${money(pi.amount, pi.currency)}</dd>
<dt>Status</dt><dd id="payment-status">${badge(pi.status)}</dd><dt>Refunded</dt><dd id="refunded">${money(pi.amount_refunded ?? 0, pi.currency)}</dd>
<dt>Phone</dt><dd>${esc(pi.payment_details?.phone_number ?? '')}</dd><dt>Operator</dt><dd>${esc(pi.payment_details?.operator ?? '')}</dd>
<dt>Description</dt><dd>${esc(pi.description ?? '')}</dd><dt>Metadata</dt><dd>${esc(Object.entries(pi.metadata ?? {}).map(([k, v]) => `${k}=${v}`).join(', '))}</dd>
<dt>Created</dt><dd>${when(pi.created)}</dd></dl>`;
  const refundable = pi.status === 'succeeded' && (pi.amount_received ?? pi.amount) - (pi.amount_refunded ?? 0) > 0;
  const step = currencyExponent(pi.currency) === 0 ? '1' : `0.${'0'.repeat(currencyExponent(pi.currency) - 1)}1`;
  const refundForm = refundable
    ? `<h2>Refund</h2>${writeForm(
        req.frame,
        `/portal/payments/${esc(pi.id)}/refund`,
        `<label>Amount (${esc(String(pi.currency).toUpperCase())}; empty: all that remains)<input name="amount" id="refund-amount" inputmode="decimal" step="${step}"></label>
<label>Reason<select name="reason"><option value="">none</option><option>requested_by_customer</option><option>duplicate</option><option>fraudulent</option></select></label>
<button type="submit" class="danger" id="refund" data-confirm="Refund this payment?">Refund</button>`,
        'class="card"',
      )}`
    : '';
  const attemptRows = attempts.map((e) => {
    const o = e.data.object;
    return [when(e.created), esc(e.type.replace('payment_intent.', '')), esc(o.payment_details?.operator ?? ''), esc(o.payment_details?.phone_number ?? ''), esc(o.last_payment_error?.operator_decline_code ?? o.last_payment_error?.code ?? '')];
  });
  const refundRows = refundList.map((r) => [`<span class="id">${esc(r.id)}</span>`, money(r.amount, r.currency), badge(r.status), esc(r.reason ?? ''), esc(r.failure_reason ?? ''), when(r.created)]);
  const body = `${facts}${refundForm}<h2>Attempts</h2>${table(['When', 'Step', 'Operator', 'Phone', 'Decline code'], attemptRows, 'No attempt yet.')}
<h2>Refunds</h2><div id="refunds">${table(['Refund', 'Amount', 'Status', 'Reason', 'Failure', 'Created'], refundRows, 'No refunds.')}</div>
<h2>Timeline</h2><ol class="timeline" id="timeline">${all.map(eventLine).join('') || '<li class="empty">No events.</li>'}</ol>`;
  return { html: page(`Payment ${money(pi.amount, pi.currency)}`, body, { frame: req.frame, active: '/portal/payments', notice }) };
}

async function refundsPage(req: PortalRequest): Promise<PortalAnswer> {
  const after = req.query.get('after');
  const res = await req.v1.get('/v1/refunds', { limit: 25, starting_after: after && /^re_[0-9A-Za-z]+$/.test(after) ? after : null });
  const data: Json[] = res.status === 200 ? res.body.data : [];
  const rows = data.map((r) => [`<span class="id">${esc(r.id)}</span>`, money(r.amount, r.currency), badge(r.status), `<a class="id" href="/portal/payments/${esc(r.payment_intent)}">${esc(r.payment_intent)}</a>`, esc(r.reason ?? ''), esc(r.failure_reason ?? ''), when(r.created)]);
  const last = data[data.length - 1];
  const more = res.status === 200 && res.body.has_more && last ? `<div class="pager"><a href="/portal/refunds?after=${esc(last.id)}">Older →</a></div>` : '';
  return { html: page('Refunds', table(['Refund', 'Amount', 'Status', 'Payment', 'Reason', 'Failure', 'Created'], rows, 'No refunds yet.') + more, { frame: req.frame, active: '/portal/refunds', notice: { error: res.error } }) };
}

export function paymentPages(routes: PortalRoutes): void {
  routes.get('/payments', (req) => paymentsPage(req));
  routes.get('/payments/:id', (req) => paymentPage(req));
  routes.post('/payments/:id/refund', async (req) => {
    const id = req.params.id as string;
    const pi = await req.v1.get(`/v1/payment_intents/${encodeURIComponent(id)}`);
    if (pi.status !== 200) return errorPage(req, 'Payment', '/portal/payments', { error: pi.error });
    const body: Record<string, unknown> = { payment_intent: id };
    const typed = (req.form.amount ?? '').trim();
    if (typed !== '') {
      const amount = minorUnits(typed, pi.body.currency);
      if (amount === null) return paymentPage(req, { error: `Not an amount in ${String(pi.body.currency).toUpperCase()}: ${typed}` });
      body.amount = amount;
    }
    if (req.form.reason) body.reason = req.form.reason;
    const res = await req.v1.post('/v1/refunds', body, req.idempotencyKey);
    if (res.status !== 200) return paymentPage(req, { error: res.error });
    return paymentPage(req, { ok: `Refund ${res.body.id} of ${formatAmount(res.body.amount, res.body.currency)} created (${res.body.status}).` });
  });
  routes.get('/refunds', refundsPage);
}

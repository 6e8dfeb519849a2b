/**
 * Money pages: balance and balance transactions with the statement download
 * (DESIGN section 16), payouts and payout batches with a CSV upload (section 17).
 * They read the `/v1` routes of those sections; on a server without them the page
 * says so instead of failing.
 */
import { badge, esc, money, page, table, when, writeForm, type Notice } from './html.js';
import { minorUnits } from './payments.js';
import type { PortalAnswer, PortalRequest, PortalRoutes } from './router.js';
import type { V1Answer } from './v1-client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- /v1 JSON
type Json = any;

const missing = (res: V1Answer) => res.status === 404 && res.body?.error?.code === 'route_not_found';
const NOT_HERE = 'This server does not offer this part of the API yet.';

async function balancePage(req: PortalRequest): Promise<PortalAnswer> {
  const [balance, txns] = await Promise.all([req.v1.get('/v1/balance'), req.v1.get('/v1/balance_transactions', { limit: 25, starting_after: req.query.get('after') })]);
  if (missing(balance)) return { html: page('Balance', `<p class="empty">${NOT_HERE}</p>`, { frame: req.frame, active: '/portal/balance' }) };
  const sums = (list: Json[] | undefined) => (list ?? []).map((b) => money(b.amount, b.currency)).join('<br>') || '—';
  const facts = balance.status === 200 ? `<dl class="facts"><dt>Available</dt><dd id="available">${sums(balance.body.available)}</dd><dt>Pending</dt><dd>${sums(balance.body.pending)}</dd></dl>` : '';
  const data: Json[] = txns.status === 200 ? txns.body.data : [];
  const rows = data.map((t) => [`<span class="id">${esc(t.id)}</span>`, esc(t.type), money(t.amount, t.currency), money(t.fee ?? 0, t.currency), money(t.net ?? t.amount, t.currency), `<span class="id">${esc(t.source ?? '')}</span>`, when(t.created)]);
  const last = data[data.length - 1];
  const more = txns.status === 200 && txns.body.has_more && last ? `<div class="pager"><a href="/portal/balance?after=${esc(last.id)}">Older →</a></div>` : '';
  const currencies = [...new Set([...(balance.body?.available ?? []), ...(balance.body?.pending ?? [])].map((b: Json) => String(b.currency)))];
  const today = new Date().toISOString().slice(0, 10);
  const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
  const statement = `<form method="get" action="/portal/balance/statement" class="filters"><label>Currency<select name="currency">${(currencies.length ? currencies : ['xof']).map((c) => `<option>${esc(c)}</option>`).join('')}</select></label>
<label>From<input type="date" name="from" value="${monthAgo}"></label><label>To<input type="date" name="to" value="${today}"></label><button type="submit">Download statement (CSV)</button></form>`;
  return { html: page('Balance', `${facts}<h2>Statement</h2>${statement}<h2>Balance transactions</h2>${table(['Transaction', 'Type', 'Amount', 'Fee', 'Net', 'Source', 'Created'], rows, 'No balance transactions yet.')}${more}`, { frame: req.frame, active: '/portal/balance', notice: { error: balance.error ?? txns.error } }) };
}

async function payoutsPage(req: PortalRequest, notice: Notice = {}): Promise<PortalAnswer> {
  const batch = req.query.get('batch');
  const res = await req.v1.get('/v1/payouts', { limit: 25, batch: batch && /^pob_[0-9A-Za-z]+$/.test(batch) ? batch : null, starting_after: req.query.get('after') });
  if (missing(res)) return { html: page('Payouts', `<p class="empty">${NOT_HERE}</p>`, { frame: req.frame, active: '/portal/payouts', notice }) };
  const data: Json[] = res.status === 200 ? res.body.data : [];
  const rows = data.map((p) => [`<span class="id">${esc(p.id)}</span>`, money(p.amount, p.currency), badge(p.status), esc(p.destination?.phone_number ?? ''), esc(p.operator ?? ''), esc(p.failure_code ?? ''), p.batch ? `<a class="id" href="/portal/payouts?batch=${esc(p.batch)}">${esc(p.batch)}</a>` : '', when(p.created)]);
  const last = data[data.length - 1];
  const more = res.status === 200 && res.body.has_more && last ? `<div class="pager"><a href="/portal/payouts?${esc(new URLSearchParams({ ...(batch ? { batch } : {}), after: last.id }).toString())}">Older →</a></div>` : '';
  const upload = writeForm(
    req.frame,
    '/portal/payouts/batch',
    `<label>CSV file (columns: reference, amount, currency, phone_number, operator, description; amounts as people write them, 5000 XOF, 12.50 KES)<input type="file" accept=".csv,text/csv" data-fills="batch-csv"></label>
<label>or paste the CSV<textarea name="csv" id="batch-csv" placeholder="reference,amount,currency,phone_number,operator&#10;r-1,5000,xof,+2250700000000,mtn_momo"></textarea></label><button type="submit" id="upload-batch">Send the batch</button>`,
    'class="card"',
  );
  return { html: page(batch ? `Payouts of ${batch}` : 'Payouts', `${table(['Payout', 'Amount', 'Status', 'To', 'Operator', 'Failure', 'Batch', 'Created'], rows, 'No payouts yet.')}${more}<h2>Upload a batch</h2>${upload}`, { frame: req.frame, active: '/portal/payouts', notice: { ...notice, error: notice.error ?? res.error } }) };
}

/** The rows of a batch's CSV as `/v1/payout_batches` items; a string says what is wrong. */
export function batchItems(csv: string): Array<Record<string, unknown>> | string {
  const lines = csv.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  if (lines.length < 2) return 'The CSV needs a header line and at least one payout.';
  const header = lines[0]!.split(',').map((h) => h.trim().toLowerCase());
  for (const need of ['reference', 'amount', 'currency', 'phone_number']) if (!header.includes(need)) return `The CSV has no ${need} column.`;
  if (lines.length - 1 > 1000) return 'At most 1000 payouts a batch.';
  const items: Array<Record<string, unknown>> = [];
  for (const [n, line] of lines.slice(1).entries()) {
    const cells = line.split(',').map((c) => c.trim());
    const row = Object.fromEntries(header.map((h, i) => [h, cells[i] ?? '']));
    const amount = minorUnits(row.amount ?? '', row.currency ?? '');
    if (amount === null) return `Line ${n + 2}: ${row.amount} is not an amount in ${String(row.currency).toUpperCase()}.`;
    const item: Record<string, unknown> = { reference: row.reference, amount, currency: String(row.currency).toLowerCase(), phone_number: row.phone_number };
    if (row.operator) item.operator = row.operator;
    if (row.description) item.description = row.description;
    items.push(item);
  }
  return items;
}

export function moneyPages(routes: PortalRoutes): void {
  routes.get('/balance', balancePage);
  routes.get('/balance/statement', async (req) => {
    const q = { currency: req.query.get('currency'), from: req.query.get('from'), to: req.query.get('to') };
    const res = await req.v1.get('/v1/statements', q);
    if (res.status !== 200) return { html: page('Statement', '', { frame: req.frame, active: '/portal/balance', notice: { error: missing(res) ? NOT_HERE : res.error } }), status: 200 };
    return { file: { name: `statement-${q.currency}-${q.from}-${q.to}.csv`.replace(/[^A-Za-z0-9_.-]/g, '_'), type: 'text/csv', body: res.text } };
  });
  routes.get('/payouts', (req) => payoutsPage(req));
  routes.post('/payouts/batch', async (req) => {
    const items = batchItems(req.form.csv ?? '');
    if (typeof items === 'string') return payoutsPage(req, { error: items });
    const res = await req.v1.post('/v1/payout_batches', { payouts: items }, req.idempotencyKey);
    if (missing(res)) return payoutsPage(req, { error: NOT_HERE });
    if (res.status !== 200) return payoutsPage(req, { error: res.error });
    return { redirect: `/portal/payouts?batch=${encodeURIComponent(res.body.id)}` };
  });
}

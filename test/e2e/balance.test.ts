/**
 * Balances, the ledger and statements, black-box (DESIGN section 16): real api and
 * worker processes, the simulator's delays shortened. Payments, refunds that
 * succeed and refunds that fail post once each; the balance, its transactions and
 * a statement agree; the Stripe SDK reads them; bad queries get 400 and nothing else.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import Stripe from 'stripe';
import { paidIntent, refund, waitForRefund, type Refund } from '../helpers/refunds.js';
import { until } from '../helpers/service.js';
import { useService } from '../helpers/use-service.js';

const e2e = useService(test, {
  workers: 1,
  env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100' },
});

interface Txn {
  id: string;
  amount: number;
  fee: number;
  net: number;
  type: string;
  source: string;
  balance_after: number;
  created: number;
  operator: string | null;
}

async function allTxns(key: string, query = ''): Promise<Txn[]> {
  const all: Txn[] = [];
  let after = '';
  for (;;) {
    const res = await e2e.service.request('GET', `/v1/balance_transactions?limit=100${query}${after ? `&starting_after=${after}` : ''}`, { key });
    if (res.status !== 200) throw new Error(res.text);
    all.push(...(res.body.data as Txn[]));
    if (!res.body.has_more) return all;
    after = all.at(-1)!.id;
  }
}

async function balanceOf(key: string): Promise<{ available: Array<{ amount: number; currency: string }>; by_operator: Array<{ operator: string | null; amount: number; currency: string }> }> {
  const res = await e2e.service.request('GET', '/v1/balance', { key });
  if (res.status !== 200) throw new Error(res.text);
  return res.body;
}

const today = () => new Date().toISOString().slice(0, 10);

test('payments, a refund that succeeds and one that fails: each posted once, and the ledger balances', async (t) => {
  const k = await e2e.key('ledger');
  t.like(await balanceOf(k), { available: [] }, 'no money, no currency');
  const [a, b, failing] = await Promise.all([paidIntent(e2e.service, k, { amount: 5000, n: 1 }), paidIntent(e2e.service, k, { amount: 3000, n: 2 }), paidIntent(e2e.service, k, { amount: 2000, suffix: '020' })]);
  const ok = await refund(e2e.service, k, { payment_intent: a.id, amount: 1500 });
  const bad = await refund(e2e.service, k, { payment_intent: failing.id });
  t.is(ok.status, 200, ok.text);
  t.is(bad.status, 200, bad.text);
  await waitForRefund(e2e.service, k, (ok.body as Refund).id, 'succeeded');
  await waitForRefund(e2e.service, k, (bad.body as Refund).id, 'failed');
  // The failed refund's release is posted before the refund shows failed.
  const txns = await until('the postings', async () => {
    const all = await allTxns(k);
    return all.length >= 6 ? all : undefined;
  });
  t.is(txns.length, 6, 'three payments, two holds, one release');
  const byType = (type: string) => txns.filter((x) => x.type === type);
  t.is(byType('payment').length, 3);
  t.deepEqual(byType('refund').map((x) => x.amount).sort(), [-1500, -2000]);
  t.like(byType('refund_failure'), [{ amount: 2000, source: (bad.body as Refund).id }]);
  const sum = txns.reduce((s, x) => s + x.net, 0);
  t.is(sum, 5000 + 3000 + 2000 - 1500);
  const balance = await balanceOf(k);
  t.deepEqual(balance.available, [{ amount: sum, currency: 'xof', source_types: { mobile_money: sum } }]);
  t.deepEqual(balance.by_operator, [{ operator: 'mtn_momo', amount: sum, currency: 'xof' }]);
  // Newest first, and each one's balance_after the one before it moved by its net.
  const oldestFirst = [...txns].reverse();
  oldestFirst.forEach((x, i) => t.is(x.balance_after, (i === 0 ? 0 : oldestFirst[i - 1]!.balance_after) + x.net, `balance_after of ${x.id}`));
  // Filters.
  t.is((await allTxns(k, '&type=payment')).length, 3);
  t.deepEqual((await allTxns(k, `&source=${b.id}`)).map((x) => x.amount), [3000]);
  t.is((await allTxns(k, `&created[gte]=${txns[0]!.created + 10}`)).length, 0);
  t.is((await allTxns(k, `&created[lte]=${txns[0]!.created}`)).length, 6);
  const one = await e2e.service.request('GET', `/v1/balance_transactions/${txns[0]!.id}`, { key: k });
  t.is(one.status, 200);
  t.deepEqual(one.body, txns[0]);
  // Another scope sees none of it.
  const other = await e2e.key('other');
  t.is((await e2e.service.request('GET', `/v1/balance_transactions/${txns[0]!.id}`, { key: other })).status, 404);
  t.like(await balanceOf(other), { available: [] });

  // The statement of today: the same rows, oldest first, between the balances.
  const csv = await e2e.service.request('GET', `/v1/statements?currency=xof&from=${today()}&to=${today()}`, { key: k });
  t.is(csv.status, 200);
  t.regex(csv.headers.get('content-type') ?? '', /^text\/csv/);
  const lines = csv.text.trim().split('\r\n');
  t.is(lines[0], 'row,id,created,type,source,operator,description,amount,fee,net,currency,balance_after');
  t.regex(lines[1]!, /^opening_balance,,\d{4}-\d\d-\d\dT00:00:00Z,,,,,,,,xof,0$/);
  t.deepEqual(lines.slice(2, -1).map((l) => l.split(',')[1]), oldestFirst.map((x) => x.id));
  t.true(lines.at(-1)!.startsWith('closing_balance,') && lines.at(-1)!.endsWith(`,xof,${sum}`));

  // The CLI writes the same file.
  const project = (await e2e.service.db()).collection('balances');
  const stored = await project.findOne({ currency: 'xof', available: sum });
  const out = path.join(tmpdir(), `statement-${process.pid}.csv`);
  const run = spawnSync(process.execPath, [path.resolve('dist/api/cli.js'), 'statement', '--project', String(stored?.project), '--currency', 'xof', '--from', today(), '--to', today(), '--out', out], {
    env: { PATH: process.env.PATH ?? '', MONGODB_URL: e2e.service.env.MONGODB_URL as string, MONGODB_DB: e2e.service.dbName },
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.is(run.status, 0, run.stderr);
  t.is(readFileSync(out, 'utf8'), csv.text, 'the CLI writes the same bytes');
  const refused = spawnSync(process.execPath, [path.resolve('dist/api/cli.js'), 'statement', '--project', 'x', '--currency', 'xof', '--from', '2026-01-01', '--to', '2026-03-01'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  t.is(refused.status, 2);
  t.regex(refused.stderr, /at most 31 days/);
});

test('the Stripe SDK reads the balance and its transactions, auto-paging included', async (t) => {
  const k = await e2e.key('sdk');
  await Promise.all([1, 2, 3].map((n) => paidIntent(e2e.service, k, { amount: 1000 * n, n })));
  const url = new URL(e2e.service.baseUrl);
  const stripe = new Stripe(k, { host: url.hostname, port: url.port, protocol: 'http', telemetry: false, maxNetworkRetries: 0 });
  const balance = await stripe.balance.retrieve();
  t.like(balance, { object: 'balance', livemode: false });
  t.deepEqual(balance.available.map((f) => [f.amount, f.currency]), [[6000, 'xof']]);
  const seen: string[] = [];
  for await (const txn of stripe.balanceTransactions.list({ limit: 1 })) seen.push(txn.id);
  t.is(seen.length, 3);
  const first = await stripe.balanceTransactions.retrieve(seen[0]!);
  t.like(first, { id: seen[0], object: 'balance_transaction', type: 'payment', currency: 'xof' });
  const payments = await stripe.balanceTransactions.list({ type: 'payment', created: { gte: first.created - 60 } });
  t.is(payments.data.length, 3);
});

test('bad queries: 400 with the parameter named, and a statement of more than 31 days is refused', async (t) => {
  const k = await e2e.key('bad');
  const ask = async (path: string) => (await e2e.service.request('GET', path, { key: k })).body?.error;
  t.like(await ask('/v1/balance_transactions?type=charge'), { code: 'parameter_invalid', param: 'type' });
  t.like(await ask('/v1/balance_transactions?created[gte]=yesterday'), { code: 'parameter_invalid_integer', param: 'created[gte]' });
  t.like(await ask('/v1/balance_transactions?colour=red'), { code: 'parameter_unknown', param: 'colour' });
  t.like(await ask('/v1/balance_transactions/txn_nope'), { code: 'resource_missing', param: 'id' });
  t.like(await ask('/v1/balance?limit=1'), { code: 'parameter_unknown' });
  t.like(await ask('/v1/statements?currency=xof&from=2026-01-01&to=2026-02-01'), { code: 'parameter_out_of_range', param: 'to' });
  t.like(await ask('/v1/statements?currency=xof&from=2026-02-30&to=2026-03-01'), { code: 'parameter_invalid', param: 'from' });
  t.like(await ask('/v1/statements?currency=xof&from=2026-03-02&to=2026-03-01'), { code: 'parameter_invalid', param: 'to' });
  t.like(await ask('/v1/statements?from=2026-03-01&to=2026-03-01'), { code: 'parameter_missing', param: 'currency' });
  t.like(await ask('/v1/statements?currency=zzz&from=2026-03-01&to=2026-03-01'), { code: 'currency_invalid', param: 'currency' });
  const ok = await e2e.service.request('GET', '/v1/statements?currency=xof&from=2026-01-01&to=2026-01-31', { key: k });
  t.is(ok.status, 200, '31 days is fine');
  t.is(ok.text.trim().split('\r\n').length, 3, 'header, opening and closing balances');
});

test('an adjustment through the admin API: posted once per reference, refused without the admin token or with bad input', async (t) => {
  const project = `adj-${Date.now().toString(36)}`;
  const k = await e2e.service.issueKey(project);
  const admin = { Authorization: `Bearer ${e2e.service.adminToken}` };
  const body = { project, currency: 'xof', amount: -250, description: 'bank charges, March', reference: 'march-charges' };
  const first = await e2e.service.request('POST', '/admin/v1/adjustments', { headers: admin, body });
  t.is(first.status, 200, first.text);
  t.like(first.body, { object: 'balance_transaction', type: 'adjustment', amount: -250, net: -250, fee: 0, balance_after: -250, operator: null, description: 'bank charges, March' });
  t.regex(first.body.source, /^adj_/);
  const again = await e2e.service.request('POST', '/admin/v1/adjustments', { headers: admin, body });
  t.is(again.status, 200);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(again.body, first.body);
  const reused = await e2e.service.request('POST', '/admin/v1/adjustments', { headers: admin, body: { ...body, amount: 250 } });
  t.like(reused.body.error, { code: 'idempotency_key_reused' });
  t.is((await e2e.service.request('POST', '/admin/v1/adjustments', { body })).status, 401);
  t.like((await e2e.service.request('POST', '/admin/v1/adjustments', { headers: admin, body: { ...body, amount: 0, reference: 'x' } })).body.error, { code: 'parameter_invalid_integer', param: 'amount' });
  t.like((await e2e.service.request('POST', '/admin/v1/adjustments', { headers: admin, body: { ...body, reference: undefined } })).body.error, { code: 'parameter_missing', param: 'reference' });
  t.like((await e2e.service.request('POST', '/admin/v1/adjustments', { headers: admin, body: { ...body, currency: 'zzz', reference: 'y' } })).body.error, { code: 'currency_invalid' });
  const balance = await balanceOf(k);
  t.deepEqual(balance.by_operator, [{ operator: null, amount: -250, currency: 'xof' }]);
  t.is((await allTxns(k)).length, 1, 'the refused ones posted nothing');
});

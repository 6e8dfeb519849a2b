/**
 * At most 16 webhook endpoints per (project, livemode), enforced by the workers so
 * that it holds under concurrent creates on several of them.
 */
import test from 'ava';
import { uniqueName, until } from '../helpers/service.js';
import { useService } from '../helpers/use-service.js';

const e2e = useService(test, { workers: 2 });

const WE = '/v1/webhook_endpoints';

test('24 concurrent creates in one scope: exactly 16 endpoints, the rest 400 webhook_endpoint_limit', async (t) => {
  const project = uniqueName('cap');
  const key = await e2e.service.issueKey(project);
  // A client retries 409 and 503 with the same key until it gets an answer, as the README says.
  const settle = (i: number) =>
    until(`an answer for cap-${i}`, async () => {
      const res = await e2e.service.request('POST', WE, { key, body: { url: `https://example.com/${i}` }, headers: { 'Idempotency-Key': `cap-${i}` } });
      return res.status === 409 || res.status === 503 ? undefined : res;
    }, 120_000);
  const results = await Promise.all(Array.from({ length: 24 }, (_, i) => settle(i)));
  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 400);
  t.is(ok.length, 16, results.map((r) => r.status).join(','));
  t.is(refused.length, 8);
  for (const r of refused) {
    t.is(r.body.error.code, 'webhook_endpoint_limit');
    t.is(r.body.error.type, 'invalid_request_error');
    t.is(r.body.error.request_id, r.headers.get('request-id'));
    t.regex(r.body.error.doc_url, /\/docs\/errors#webhook_endpoint_limit$/);
  }
  t.is(await (await e2e.service.db()).collection('webhook_endpoints').countDocuments({ project }), 16);

  // Full: the 17th is refused, and a retry of a refused key is refused again (not recorded, not stuck in flight).
  const again = await e2e.service.request('POST', WE, { key, body: { url: 'https://example.com/17' } });
  t.is(again.status, 400);
  t.is(again.body.error.code, 'webhook_endpoint_limit');
  const refusedIndex = results.indexOf(refused[0]!);
  const retry = await e2e.service.request('POST', WE, {
    key,
    body: { url: `https://example.com/${refusedIndex}` },
    headers: { 'Idempotency-Key': `cap-${refusedIndex}` },
  });
  t.is(retry.status, 400);
  t.is(retry.body.error.code, 'webhook_endpoint_limit');

  // A key that did create one still replays it.
  const createdIndex = results.indexOf(ok[0]!);
  const replay = await e2e.service.request('POST', WE, {
    key,
    body: { url: `https://example.com/${createdIndex}` },
    headers: { 'Idempotency-Key': `cap-${createdIndex}` },
  });
  t.is(replay.status, 200);
  t.is(replay.text, ok[0]!.text);
});

test('the cap is per project and mode', async (t) => {
  const project = uniqueName('capscope');
  const [test16, live, other] = await Promise.all([e2e.service.issueKey(project), e2e.service.issueKey(project, true), e2e.key('capother')]);
  for (let i = 0; i < 16; i++) {
    const res = await e2e.service.request('POST', WE, { key: test16, body: { url: `https://example.com/${i}` } });
    t.is(res.status, 200);
  }
  t.is((await e2e.service.request('POST', WE, { key: test16, body: { url: 'https://example.com/x' } })).status, 400);
  t.is((await e2e.service.request('POST', WE, { key: live, body: { url: 'https://example.com/live' } })).status, 200);
  t.is((await e2e.service.request('POST', WE, { key: other, body: { url: 'https://example.com/other' } })).status, 200);
});

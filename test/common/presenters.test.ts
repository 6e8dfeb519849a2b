import test from 'ava';
import { toPairs } from '../../common/metadata.js';
import type { PaymentIntentDoc, WebhookEndpointDoc } from '../../common/documents.js';
import { listEnvelopeJson, presentPaymentIntent, presentWebhookEndpoint } from '../../common/presenters.js';

const pi: PaymentIntentDoc = {
  _id: 'pi_00VbYV85n9aIzXB1ggNYQfQ', project: 'acme', livemode: false, amount: 100, currency: 'usd', description: null,
  status: 'new', client_secret: 'pi_00VbYV85n9aIzXB1ggNYQfQ_secret_abc', automatic_operator: true,
  allowed_operators: ['wave'], selected_operator: null, metadata: toPairs(JSON.parse('{"a.b":"1","$c":"2","__proto__":"3"}')),
  created: 1, expires_at: 2, created_event: '{}',
};

test('a payment intent is presented with the spec\'s fields only, storage fields never', (t) => {
  const out = presentPaymentIntent(pi, { withSecret: false }) as Record<string, unknown>;
  t.is(out.id, pi._id);
  t.is(out._id, undefined);
  t.is(out.project, undefined);
  t.is(out.created_event, undefined);
  t.is(out.client_secret, undefined);
  t.is(out.next_action, null);
  t.is(JSON.stringify(out.metadata), '{"a.b":"1","$c":"2","__proto__":"3"}');
});

test('the client secret is presented only when asked (the create response)', (t) => {
  t.is(presentPaymentIntent(pi, { withSecret: true }).client_secret, pi.client_secret);
});

test('a webhook endpoint shows its secret only when asked', (t) => {
  const doc: WebhookEndpointDoc = {
    _id: 'we_1', project: 'p', livemode: true, url: 'https://x.test', enabled_events: ['*'], description: null, metadata: [],
    status: 'enabled', secret: 'whsec_abc', created: 1, failing_since: null, disabled_reason: null,
  };
  t.false(JSON.stringify(presentWebhookEndpoint(doc, { withSecret: false })).includes('whsec_'));
  t.is(presentWebhookEndpoint(doc, { withSecret: true }).secret, 'whsec_abc');
  t.is((presentWebhookEndpoint(doc, { withSecret: false }) as Record<string, unknown>).failing_since, undefined);
});

test('the list envelope is valid JSON in the contract\'s member order', (t) => {
  const json = listEnvelopeJson('/v1/events', ['{"id":"evt_1"}', '{"id":"evt_2"}'], true);
  t.deepEqual(JSON.parse(json), { object: 'list', url: '/v1/events', has_more: true, data: [{ id: 'evt_1' }, { id: 'evt_2' }] });
  t.deepEqual(JSON.parse(listEnvelopeJson('/v1/x', [], false)).data, []);
});

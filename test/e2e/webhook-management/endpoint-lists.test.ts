/**
 * Each worker keeps the endpoints of a scope for its fan-out
 * (worker/webhooks/endpoint-directory.ts). Black-box, with two workers that both
 * hold the scope's list: once a change of an endpoint is answered, every event after
 * it goes by the change, whichever worker records it.
 */
import test from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import { Receiver } from '../../helpers/receiver.js';
import { Service, uniqueName, untilIdle } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, waitDispatched } from '../../helpers/webhook-fixtures.js';
import { manage, verifiesWith } from '../../helpers/webhook-management.js';

let service: Service;
let receiver: Receiver;

test.before(async () => {
  [service, receiver] = await Promise.all([Service.start({ workers: 2 }), Receiver.start()]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), receiver?.close()]);
});

const idsOn = (path: string) => receiver.received(path).map((r) => String(r.headers['webhook-id']));

test('a created, a deleted and a rotated endpoint apply to the next event, with both workers holding the scope', async (t) => {
  const project = uniqueName('lists');
  const key = await service.issueKey(project);
  const [a, b] = [`/${project}/a`, `/${project}/b`];
  await createEndpoint(service, key, receiver.url(a));
  // Enough events for both workers to have read and kept the scope's one endpoint.
  const early = [];
  for (let i = 0; i < 8; i++) early.push((await createPaymentIntent(service, key)).eventId);
  await receiver.waitFor(a, 8);

  const second = await createEndpoint(service, key, receiver.url(b));
  const after = [];
  for (let i = 0; i < 6; i++) after.push((await createPaymentIntent(service, key)).eventId);
  await receiver.waitFor(b, 6);
  t.deepEqual(idsOn(b).sort(), [...after].sort(), 'every event after the create reached the new endpoint, and none before it');
  await receiver.waitFor(a, 14);

  const firstId = (await service.request('GET', '/v1/webhook_endpoints', { key })).body.data.find((e: { url: string }) => e.url === receiver.url(a)).id as string;
  const deleted = await manage(service, key, 'DELETE', firstId);
  t.is(deleted.status, 200, deleted.text);
  const rotated = await manage(service, key, 'POST', second.id, 'rotate_secret', { body: { expire_previous_in: 0 } });
  t.is(rotated.status, 200, rotated.text);
  const fresh = rotated.body.secret as string;
  const last = [];
  for (let i = 0; i < 6; i++) last.push((await createPaymentIntent(service, key)).eventId);
  const onB = await receiver.waitFor(b, 12);
  for (const id of last) await waitDispatched(service, id);
  await untilIdle(service, [QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(a).length, 14, 'the deleted endpoint got none of the later events');
  for (const delivery of onB.slice(6)) {
    t.deepEqual(verifiesWith(fresh, delivery), { ours: true, standard: true }, 'signed with the new secret');
    t.deepEqual(verifiesWith(second.secret, delivery), { ours: false, standard: false }, 'not with the old one');
  }
});

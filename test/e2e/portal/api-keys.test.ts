/**
 * `/v1/api_keys` (the portal's API keys page): a key lists and makes keys of its own
 * project and mode; a roll answers a new secret and the old key gets 401 at once.
 */
import test from 'ava';
import { Service, uniqueName } from '../../helpers/service.js';

let service: Service;

test.before(async () => {
  service = await Service.start({ workers: 1 });
});

test.after.always(async () => {
  await service?.stop();
});

test('lists, creates and rolls keys of its own scope; the rolled key is refused at once', async (t) => {
  const project = uniqueName('keys');
  const key = await service.issueKey(project);
  const live = await service.issueKey(project, true);

  const created = await service.request('POST', '/v1/api_keys', { key });
  t.is(created.status, 200, created.text);
  t.regex(created.body.secret, /^sk_test_/);
  t.false(created.body.livemode);
  t.is(created.body.project, project);

  const listed = await service.request('GET', '/v1/api_keys', { key });
  t.is(listed.status, 200);
  t.is(listed.body.data.length, 2, 'the two test keys, not the live one');
  t.true(listed.body.data.every((k: { secret?: string; livemode: boolean }) => k.secret === undefined && !k.livemode));

  const rolled = await service.request('POST', `/v1/api_keys/${created.body.id}/roll`, { key });
  t.is(rolled.status, 200, rolled.text);
  t.not(rolled.body.id, created.body.id);
  t.is((await service.request('GET', '/v1/payment_intents', { key: created.body.secret })).status, 401, 'the old secret is refused');
  t.is((await service.request('GET', '/v1/payment_intents', { key: rolled.body.secret })).status, 200, 'the new one works');
  const again = await service.request('POST', `/v1/api_keys/${created.body.id}/roll`, { key });
  t.is(again.status, 400, 'a revoked key is not rolled twice');

  // Another mode's key is not in this scope.
  const liveId = (await service.request('GET', '/v1/api_keys', { key: live })).body.data[0].id as string;
  t.is((await service.request('POST', `/v1/api_keys/${liveId}/roll`, { key })).status, 404);
  t.is((await service.request('POST', '/v1/api_keys', { key, body: { livemode: true } })).body.error.code, 'parameter_unknown');
});

/**
 * Retrieves answered from the intents an api keeps (api/kept-intents.ts), black-box:
 * once a confirm is answered, a retrieve shows its change, and a client polling the
 * intent sees each step of the payment in order until it is final, because every
 * transition replaces the intent's token in Redis before and after its write.
 */
import test from 'ava';
import { intentTokenKey } from '../../../common/intent-tokens.js';
import { Service, sleep, uniqueName } from '../../helpers/service.js';
import { confirm, createIntent, retrieve } from '../../helpers/payment-intent-lifecycle.js';

let service: Service;

test.before(async () => {
  service = await Service.start({ workers: 1, env: { SIMULATOR_APPROVAL_DELAY_MS: '300', SIMULATOR_PROCESSING_DELAY_MS: '300' } });
});

test.after.always(async () => {
  await service?.stop();
});

const ORDER = ['new', 'requires_action', 'processing', 'succeeded'];

test('a retrieve after a confirm shows it, and polls see every step in order up to succeeded', async (t) => {
  const key = await service.issueKey(uniqueName('kept'));
  const intent = await createIntent(service, key);
  // Retrieved before the confirm: the api keeps it, under a token it sets.
  t.is((await retrieve(service, key, intent.id)).status, 'new');
  t.is((await retrieve(service, key, intent.id)).status, 'new');
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  const first = await redis.get(intentTokenKey(service.prefix, intent.id));
  t.truthy(first);

  const confirmed = await confirm(service, key, intent.id, { operator: 'mtn_momo', phone_number: '+2250700000000' });
  t.is(confirmed.status, 200, confirmed.text);
  const answered = (confirmed.body as { status: string }).status;
  t.is(answered, 'requires_action');
  t.not(await redis.get(intentTokenKey(service.prefix, intent.id)), first, 'the confirm replaced the token');

  const seen: string[] = [];
  const deadline = Date.now() + 20_000;
  for (;;) {
    const status = (await retrieve(service, key, intent.id)).status;
    if (seen.at(-1) !== status) seen.push(status);
    if (status === 'succeeded' || Date.now() > deadline) break;
    await sleep(50);
  }
  t.is(seen[0], 'requires_action', 'the first retrieve after the answer shows the confirm');
  t.is(seen.at(-1), 'succeeded');
  t.deepEqual(seen, [...seen].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b)), `steps in order: ${seen.join(' → ')}`);
});

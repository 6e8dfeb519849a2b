/**
 * Retrieves answered from the intents an api keeps (common/kept-intents.ts), black-box:
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

test.serial('a retrieve after a confirm shows it, and polls see every step in order up to succeeded', async (t) => {
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

/** The api's finds of payment intents so far (`mongodb_commands_total`, common/metrics.ts). */
async function apiFindsOfIntents(): Promise<number> {
  const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('mongodb_commands_total{') && l.includes('command="find"') && l.includes('collection="payment_intents"'));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

test.serial('a confirm of an intent this api created reads nothing of it; one of an intent it never saw does', async (t) => {
  const key = await service.issueKey(uniqueName('known'));
  const intent = await createIntent(service, key);
  const before = await apiFindsOfIntents();
  const confirmed = await confirm(service, key, intent.id, { operator: 'mtn_momo', phone_number: '+2250700000000' });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(await apiFindsOfIntents(), before, 'no existence check in MongoDB for an intent created here');

  // An id of the right shape that no intent has.
  const never = `${intent.id.slice(0, -1)}${intent.id.endsWith('0') ? '1' : '0'}`;
  const unknown = await confirm(service, key, never, { operator: 'mtn_momo', phone_number: '+2250700000000' });
  t.is(unknown.status, 404, unknown.text);
  t.is(await apiFindsOfIntents(), before + 1, 'an intent this api never saw is looked for');
  // Another key's scope does not know it either.
  const other = await service.issueKey(uniqueName('known-other'));
  t.is((await confirm(service, other, intent.id, { operator: 'mtn_momo', phone_number: '+2250700000000' })).status, 404);
});

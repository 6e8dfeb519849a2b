/**
 * Exactly once under faults (DESIGN.md section 7: every transition happens exactly
 * once and survives worker crashes like a create). 200 intents are confirmed at once,
 * each with its own Idempotency-Key, every tenth canceled meanwhile; while the
 * operators' answers are being applied, each worker is SIGKILLed and replaced. Then:
 *
 * - each intent has exactly one final status, and its events say the same: one
 *   attempt, each type at most once, at most one `succeeded`, never both succeeded
 *   and canceled, no event listed twice;
 * - the receiver (subscribed to the outcomes) got each one, signed; redeliveries (the
 *   same `webhook-id` again, allowed after a crash) are counted, never a second event
 *   of the same kind;
 * - every keyed confirm and cancel, sent again, replays its first answer byte for
 *   byte with `Idempotent-Replayed: true`.
 */
import test from 'ava';
import type { Queue } from 'bullmq';
import { QUEUES } from '../../../common/jobs.js';
import { Service, serviceQueue, sleep, uniqueName, until, untilIdle, type ApiResponse } from '../../helpers/service.js';
import { Receiver } from '../../helpers/receiver.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import {
  cancel,
  confirm,
  deliveredEvents,
  eventsOf,
  listAllEvents,
  listAllIntents,
  mapLimit,
  phone,
  PI,
  verifiedDeliveries,
  type Intent,
} from '../../helpers/payment-intent-lifecycle.js';

const COUNT = 200;
/** A restarted worker runs this long before the next is killed: kills spread over the run, not bunched. */
const BETWEEN_KILLS_MS = 1500;

/**
 * A client as the README asks: the same request with the same key on a network
 * error, a 409 or a 503, after `Retry-After` and with jittered exponential backoff,
 * until another answer.
 */
async function untilAnswered(send: () => Promise<ApiResponse>): Promise<{ first: ApiResponse; tries: number }> {
  for (let tries = 1; ; tries++) {
    const res = await send().catch(() => null);
    if (res && res.status !== 409 && res.status !== 503) return { first: res, tries };
    const retryAfterMs = Number(res?.headers.get('retry-after') ?? 0) * 1000;
    const backoffMs = Math.min(8000, 500 * 2 ** (tries - 1));
    await sleep(Math.max(retryAfterMs, backoffMs / 2 + Math.random() * (backoffMs / 2)));
  }
}

async function createAll(service: Service, key: string): Promise<Intent[]> {
  return mapLimit(Array.from({ length: COUNT }, (_, i) => i), 20, async (i) => {
    const { first } = await untilAnswered(() => service.request('POST', PI, { key, body: { amount: 1000 + i, currency: 'xof' } }));
    if (first.status !== 200) throw new Error(`create ${i}: ${first.text}`);
    return first.body as Intent;
  });
}

/**
 * Most intents pay by Orange Money with the code in the confirm (confirm, then the
 * operator settles: two transitions, the cheapest way to a final status on this
 * stack, where every update scans its collection). Every tenth pays by phone
 * approval (confirm, the payer's answer, settling), and is canceled meanwhile, the
 * cancel racing the payer's answer.
 */
function viaPhone(i: number): boolean {
  return i % 10 === 0;
}

function confirmBody(i: number): Record<string, unknown> {
  return viaPhone(i)
    ? { operator: 'mtn_momo', phone_number: phone('225', '000', i) }
    : { operator: 'orange_money', phone_number: phone('225', '000', i), otp: '123456' };
}

interface Answered {
  first: ApiResponse;
  tries: number;
}

interface Run {
  service: Service;
  key: string;
  hook: string;
  secret: string;
  receiver: Receiver;
  intentsQueue: Queue;
  intents: Intent[];
  bodies: Array<Record<string, unknown>>;
  results: Array<{ pi: Intent; confirmed: Answered; duplicate: Answered | null; canceled: Answered | null }>;
}

// Three serial tests share one run, each a phase (answers, outcomes, replays): each
// phase reports on its own, so a slow machine is not mistaken for a stalled test.
let run: Partial<Run> = {};

test.before(async () => {
  const [service, receiver] = await Promise.all([
    Service.start({
      workers: 2,
      env: { SIMULATOR_APPROVAL_DELAY_MS: '1500', SIMULATOR_PROCESSING_DELAY_MS: '1000', WORKER_CONCURRENCY: '32', WRITE_TIMEOUT_MS: '60000', CREATE_ADMISSION_WAIT_MS: '0' },
    }),
    Receiver.start(),
  ]);
  run = { service, receiver };
  const project = uniqueName('exactly-once');
  const key = await service.issueKey(project);
  const hook = `/${project}`;
  // The receiver takes the outcomes: the events a consumer acts on, where a duplicate would do harm.
  const endpoint = await createEndpoint(service, key, receiver.url(hook), ['payment_intent.succeeded', 'payment_intent.canceled']);
  const intentsQueue = serviceQueue(service, QUEUES.intents);
  run = { ...run, key, hook, secret: endpoint.secret, intentsQueue };
  const intents = await createAll(service, key);
  run = { ...run, intents, bodies: intents.map((_, i) => confirmBody(i)) };
});

test.after.always(async () => {
  await run.intentsQueue?.close();
  await Promise.all([run.service?.stop(), run.receiver?.close()]);
});

function started(): Run {
  if (!run.results) throw new Error('the confirms did not run: see the first test');
  return run as Run;
}

test.serial('200 keyed confirms at once, a cancel racing every tenth, each worker SIGKILLed while operator answers apply: every request answered', async (t) => {
  const { service, key, intents, bodies, intentsQueue } = run as Run;
  const canceledOnes = new Set(intents.filter((_, i) => viaPhone(i)).map((pi) => pi.id));

  // Every confirm at once, every fourth sent twice (a double click: the second one
  // meets the first in flight and retries); the cancels follow their confirm, racing
  // the payer's answer.
  const begun = Date.now();
  const answers = Promise.all(
    intents.map(async (pi, i) => {
      const send = () => confirm(service, key, pi.id, bodies[i]!, { 'Idempotency-Key': `confirm-${i}` });
      const [confirmed, duplicate] = await Promise.all([
        untilAnswered(send),
        i % 4 === 0 ? sleep(Math.floor(Math.random() * 500)).then(() => untilAnswered(send)) : null,
      ]);
      let canceled: Answered | null = null;
      if (canceledOnes.has(pi.id)) {
        await sleep(Math.floor(Math.random() * 3000));
        canceled = await untilAnswered(() => cancel(service, key, pi.id, { cancellation_reason: 'abandoned' }, { 'Idempotency-Key': `cancel-${i}` }));
      }
      return { pi, confirmed, duplicate, canceled };
    }),
  );

  // Kill each worker while operator answers are being applied, and replace it.
  for (let k = 0; k < 2; k++) {
    await until(
      'operator answers being applied',
      async () => ((await intentsQueue.getActiveCount()) > 0 ? true : undefined),
      60_000,
    );
    const victim = service.workers[k]!;
    victim.kill('SIGKILL');
    await victim.exited;
    await service.startWorker();
    await sleep(BETWEEN_KILLS_MS);
  }
  const results = await answers;
  run.results = results;
  const pairs = results.filter((r) => r.duplicate !== null);
  const flagged = pairs.filter((r) => [r.confirmed, r.duplicate!].some((a) => a.first.headers.get('idempotent-replayed') === 'true')).length;
  t.log(`pairs of identical confirms answered with a replay: ${flagged} of ${pairs.length}`);
  const retries = results.reduce((n, r) => n + r.confirmed.tries - 1 + (r.duplicate ? r.duplicate.tries - 1 : 0) + (r.canceled ? r.canceled.tries - 1 : 0), 0);
  t.log(`confirms and cancels answered in ${Date.now() - begun} ms; retries after a 409 or 503: ${retries}`);

  for (const { pi, confirmed, duplicate, canceled } of results) {
    t.is(confirmed.first.status, 200, `confirm ${pi.id}: ${confirmed.first.text}`);
    t.is(confirmed.first.body.status, viaPhone(intents.indexOf(pi)) ? 'requires_action' : 'processing');
    // The same request twice: one confirm made, both told the same, byte for byte. (Which
    // one is flagged a replay depends on timing: a retry that attached to the job still
    // running gets its answer, not a replay; a retry after it completed gets the replay.)
    if (duplicate) t.is(duplicate.first.text, confirmed.first.text, `${pi.id}: the duplicate confirm got the same answer`);
    if (canceled) {
      t.true([200, 400].includes(canceled.first.status), `cancel ${pi.id}: ${canceled.first.text}`);
      if (canceled.first.status === 400) t.is(canceled.first.body.error.code, 'payment_intent_unexpected_state');
    }
  }
});

test.serial('each intent ends with one final status, its events agree (each kind once, none listed twice), and the receiver gets each outcome once, signed', async (t) => {
  const { service, key, hook, secret, receiver, intents, results, intentsQueue } = started();
  // Everything settles: a final event reaches the receiver for every intent.
  const finalTypes = new Set(['payment_intent.succeeded', 'payment_intent.canceled']);
  await until(
    'a final event for every intent at the receiver',
    () => {
      const done = new Set(deliveredEvents(receiver, hook).filter((d) => finalTypes.has(d.type)).map((d) => d.object));
      return intents.every((pi) => done.has(pi.id)) ? true : undefined;
    },
    150_000,
  );
  // Whatever could still transition or deliver has run: a duplicate would show by now.
  await untilIdle(service, [QUEUES.writes, QUEUES.intents, QUEUES.events, QUEUES.webhooks], 120_000);

  const [listing, stored] = await Promise.all([listAllEvents(service, key), listAllIntents(service, key)]);
  t.is(new Set(listing.map((e) => e.id)).size, listing.length, 'no event listed twice');
  let canceledCount = 0;
  for (const { pi, canceled } of results) {
    const final = stored.get(pi.id)!;
    const types = eventsOf(listing, pi.id).map((e) => e.type);
    t.is(new Set(types).size, types.length, `${pi.id}: each kind of event at most once: ${types.join(', ')}`);
    if (final.status === 'canceled') {
      canceledCount++;
      t.deepEqual(types, ['payment_intent.created', 'payment_intent.requires_action', 'payment_intent.canceled'], pi.id);
      t.is(canceled?.first.status, 200, `${pi.id}: canceled, so its cancel was the one answered 200`);
    } else {
      t.is(final.status, 'succeeded', pi.id);
      t.deepEqual(types, ['payment_intent.created', ...(viaPhone(intents.indexOf(pi)) ? ['payment_intent.requires_action'] : []), 'payment_intent.processing', 'payment_intent.succeeded'], pi.id);
      if (canceled) t.is(canceled.first.status, 400, `${pi.id}: succeeded, so its cancel lost`);
    }
  }
  t.log(`${canceledCount} canceled, ${COUNT - canceledCount} succeeded`);

  // The receiver: every event, signed; a crash may resend one (same webhook-id), never a second event of a kind.
  const deliveries = verifiedDeliveries(receiver, hook, secret);
  const ids = new Set(deliveries.map((d) => d.webhookId));
  const subscribed = listing.filter((e) => finalTypes.has(e.type));
  t.deepEqual([...ids].sort(), subscribed.map((e) => e.id).sort(), 'every listed event of the subscribed types delivered, nothing else');
  const kinds = new Map<string, string>();
  for (const d of deliveries) {
    const kind = `${d.event.data.object.id} ${d.event.type}`;
    const seen = kinds.get(kind);
    if (seen !== undefined) t.is(seen, d.webhookId, `${kind}: one event only`);
    kinds.set(kind, d.webhookId);
  }
  t.log(`${deliveries.length} deliveries of ${ids.size} events (${deliveries.length - ids.size} redelivered after a crash)`);
  t.log(`jobs recovered as stalled after the kills: ${service.logs().filter((l) => l.includes('job stalled')).length}`);
  t.is(await intentsQueue.getFailedCount(), 0, 'no operator answer failed for good');
});

test.serial('every keyed confirm and cancel, sent again, replays its first answer byte for byte', async (t) => {
  const { service, key, intents, bodies, results } = started();
  await mapLimit(results, 10, async ({ pi, confirmed, canceled }) => {
    const i = intents.indexOf(pi);
    const again = await confirm(service, key, pi.id, bodies[i]!, { 'Idempotency-Key': `confirm-${i}` });
    t.is(again.status, confirmed.first.status);
    t.is(again.text, confirmed.first.text, `confirm-${i} replayed byte for byte`);
    t.is(again.headers.get('idempotent-replayed'), 'true');
    if (canceled) {
      const cancelAgain = await cancel(service, key, pi.id, { cancellation_reason: 'abandoned' }, { 'Idempotency-Key': `cancel-${i}` });
      t.is(cancelAgain.text, canceled.first.text, `cancel-${i} replayed byte for byte`);
      t.is(cancelAgain.headers.get('idempotent-replayed'), 'true');
    }
  });
});

/**
 * Replays at the door (api/handlers/replay-from-memory.ts): the same bytes as a
 * request this process answered get its answer before Koa, with the headers, log
 * line and metrics the routes give; anything else goes on to the routes, its body
 * (or the error reading it) and its rate-limit count handed on. Driven through `createApi(deps)` on a local HTTP
 * server, with a worker in the same process; Redis and FerretDB are real.
 */
import test from 'ava';
import { openStack, startInProcess, type InProcessService, type Stack } from '../../helpers/in-process.js';
import { uniqueName } from '../../helpers/service.js';

const PI = '/v1/payment_intents';

interface Opened {
  stack: Stack;
  service: InProcessService;
  key: string;
}

const opened: Opened[] = [];

async function open(env: Record<string, string> = {}): Promise<Opened> {
  const stack = await openStack(env);
  const service = await startInProcess(stack);
  const key = await service.issueKey(uniqueName('asent'));
  const o = { stack, service, key };
  opened.push(o);
  return o;
}

test.after.always(async () => {
  for (const o of opened) {
    await o.service.stop();
    await o.stack.close();
  }
});

/** Sends `text` as it is; `chunked`: in chunks of 16 KiB, without a Content-Length. */
async function post(o: Opened, idempotencyKey: string, text: string, contentType = 'application/json', chunked = false) {
  const chunks = chunked ? Array.from({ length: Math.ceil(text.length / 16384) }, (_, i) => text.slice(i * 16384, (i + 1) * 16384)) : [];
  const body = chunked
    ? new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(next));
        },
      })
    : text;
  const res = await fetch(o.service.baseUrl + PI, {
    method: 'POST',
    headers: { Authorization: `Bearer ${o.key}`, 'Content-Type': contentType, 'Idempotency-Key': idempotencyKey },
    body,
    ...(chunked ? { duplex: 'half' } : {}),
  } as RequestInit);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Every header but the ones that differ between any two answers. */
function stableHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name !== 'request-id' && name !== 'date') out[name] = value;
  });
  return out;
}

test.serial('the same bytes again are answered at the door, with the status, body, headers, log line and metrics the routes give', async (t) => {
  const o = await open();
  const body = '{"amount": 4100, "metadata": {"order": "a-1"}}';
  const first = await post(o, 'as-sent', body);
  t.is(first.status, 200, first.text);
  t.is(o.service.answeredAsSent(), 0);

  // Forgotten: the next replay is found in Redis, through the routes, and kept again with its bytes.
  o.service.forgetReplays();
  const throughRoutes = await post(o, 'as-sent', body);
  t.is(throughRoutes.status, 200);
  t.is(o.service.answeredAsSent(), 0, 'no replay was kept: the routes answered');

  const early = await post(o, 'as-sent', body);
  t.is(o.service.answeredAsSent(), 1, 'answered before routing');
  t.is(early.status, 200);
  t.is(early.text, first.text, 'the create answer, byte for byte');
  t.is(early.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(stableHeaders(early.headers), stableHeaders(throughRoutes.headers));
  t.regex(early.headers.get('request-id') ?? '', /^req_/);
  t.not(early.headers.get('request-id'), throughRoutes.headers.get('request-id'));
  const recorded = o.service.recorded();
  t.is(recorded.length, 3, 'every request has its log line and metrics');
  t.deepEqual(recorded[2], { method: 'POST', route: '/v1/payment_intents', status: 200 }, 'under the route template');
  t.deepEqual(recorded[2], recorded[1]);
});

test.serial('a body the door could not read is refused by the routes as they refuse it, read once', async (t) => {
  const o = await open();
  const body = '{"amount":4400}';
  t.is((await post(o, 'too-large', body)).status, 200);
  await post(o, 'too-large', body);
  t.is(o.service.answeredAsSent(), 1, 'the key and its bytes are kept');

  // Chunked: the door reads up to the limit before the error, so the routes must not read again.
  const large = JSON.stringify({ amount: 4400, metadata: { note: 'x'.repeat(70 * 1024) } });
  const atTheDoor = await post(o, 'too-large', large, 'application/json', true);
  const elsewhere = await post(o, 'too-large-elsewhere', large, 'application/json', true);
  t.is(atTheDoor.status, 413, atTheDoor.text);
  t.is(JSON.parse(atTheDoor.text).error.code, 'body_too_large');
  t.deepEqual(JSON.parse(atTheDoor.text).error.message, JSON.parse(elsewhere.text).error.message);
  t.deepEqual(stableHeaders(atTheDoor.headers), stableHeaders(elsewhere.headers));
  t.is(o.service.answeredAsSent(), 1);
});

test.serial('other bytes go through the routes: the same value is a replay, another is idempotency_key_reused', async (t) => {
  const o = await open();
  const first = await post(o, 'other-bytes', '{"amount":4200,"currency":"xof"}');
  t.is(first.status, 200, first.text);

  const reordered = await post(o, 'other-bytes', '{ "currency": "xof", "amount": 4200 }');
  t.is(reordered.status, 200);
  t.is(reordered.text, first.text);
  t.is(reordered.headers.get('idempotent-replayed'), 'true');
  t.is(o.service.answeredAsSent(), 0, 'matched by its canonical form, in the routes');

  const another = await post(o, 'other-bytes', '{"amount":4201,"currency":"xof"}');
  t.is(another.status, 400);
  t.is(JSON.parse(another.text).error.code, 'idempotency_key_reused');

  // A form body of the same text is another request: refused by the routes, not replayed.
  const form = await post(o, 'other-bytes', 'amount=4200&currency=xof', 'application/x-www-form-urlencoded');
  t.is(form.status, 400);
  t.is(JSON.parse(form.text).error.code, 'idempotency_key_reused');

  const again = await post(o, 'other-bytes', '{ "currency": "xof", "amount": 4200 }');
  t.is(again.text, first.text);
  t.is(o.service.answeredAsSent(), 1, 'the reordered bytes were kept by their replay, and matched now');
});

test.serial('each request counts once against the rate limit, answered before routing or not', async (t) => {
  const o = await open({ RATE_LIMIT_PER_SECOND: '2' });
  o.stack.clock.advance(1000 - (o.stack.clock.now() % 1000));
  const first = await post(o, 'limited', '{"amount":4300}');
  t.is(first.status, 200, first.text);
  // Read before routing, then handed on (other bytes): counted once, so still within 2.
  const handedOn = await post(o, 'limited', '{"amount": 4300}');
  t.is(handedOn.status, 200, handedOn.text);
  t.is(o.service.answeredAsSent(), 0);
  const over = await post(o, 'limited', '{"amount":4300}');
  t.is(over.status, 429);
  t.is(JSON.parse(over.text).error.code, 'rate_limit');
  t.is(over.headers.get('retry-after'), '1');
  t.is(o.service.answeredAsSent(), 0, 'the limit is checked before the answer');

  o.stack.clock.advance(1000);
  const next = await post(o, 'limited', '{"amount": 4300}');
  t.is(next.status, 200);
  t.is(next.text, first.text);
  t.is(o.service.answeredAsSent(), 1);
});

/**
 * A request reads the clock once: the `created` of what it makes and the defaults
 * computed from "now" (a payment intent's `expires_at`) come from the same reading,
 * however long validation, admission and the lock take. The injected clock here
 * moves a whole second at every reading, so two readings could never agree.
 */
import test from 'ava';
import { openStack, startInProcess, type InProcessService, type Stack } from '../helpers/in-process.js';
import { uniqueName } from '../helpers/service.js';

let stack: Stack;
let service: InProcessService;
let key: string;

test.before(async () => {
  stack = await openStack();
  service = await startInProcess(stack);
  key = await service.issueKey(uniqueName('clock'));
});

test.after.always(async () => {
  await service?.stop();
  await stack?.close();
});

for (const keyed of [false, true]) {
  test.serial(`the default expires_at is created + 24 h to the second${keyed ? ', with an Idempotency-Key' : ''}`, async (t) => {
    stack.clock.tickPerRead = 1000;
    try {
      const headers: Record<string, string> = keyed ? { 'Idempotency-Key': uniqueName('k') } : {};
      const res = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 500 }, headers });
      t.is(res.status, 200, res.text);
      t.is(res.body.expires_at, res.body.created + 86_400);
    } finally {
      stack.clock.tickPerRead = 0;
    }
  });
}

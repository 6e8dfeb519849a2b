/**
 * A client that gives up while its body is being read is no fault of ours: one info
 * line (status 499, "client closed request"), no error, no 500.
 */
import net from 'node:net';
import test from 'ava';
import { Service, uniqueName } from '../helpers/service.js';

test('a client that aborts mid-body is logged at info, not as an error', async (t) => {
  const service = await Service.start({ workers: 0 });
  t.teardown(() => service.stop());
  const key = await service.issueKey(uniqueName('aborted'));
  const socket = net.connect({ host: '127.0.0.1', port: service.port });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  // With `Expect: 100-continue` the api says when it has taken the request (Node answers
  // 100 and hands it to the app at once): the body is cut short only then.
  const continued = new Promise<void>((resolve) => socket.on('data', (chunk: Buffer) => chunk.toString().startsWith('HTTP/1.1 100') && resolve()));
  socket.write(
    'POST /v1/payment_intents HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
      `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`,
  );
  await continued;
  await new Promise<void>((resolve) => socket.write('{"amount":', () => resolve()));
  socket.destroy();

  const line = await service.api.waitFor(/client aborted the request/);
  const entry = JSON.parse(line) as { level: number; reason: string };
  t.is(entry.level, 30, 'info');
  const request = JSON.parse(await service.api.waitFor(/"route":"\/v1\/payment_intents"/)) as { status: number };
  t.is(request.status, 499);
  const errors = service.logs().filter((l) => l.startsWith('{') && (JSON.parse(l) as { level: number }).level >= 50);
  t.deepEqual(errors, []);
});

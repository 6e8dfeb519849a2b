/**
 * The start-up of a black-box test file that shares one service (and, if asked, one
 * webhook receiver) across its tests: started in `test.before`, stopped in
 * `test.after.always`, read through getters once started.
 *
 *     const e2e = useService(test, { workers: 1, receiver: true });
 *     test('…', async (t) => {
 *       const key = await e2e.key('name');
 *       const res = await e2e.service.request('GET', '/v1/payment_intents', { key });
 *       await e2e.receiver.waitFor('/hooks');
 *     });
 */
import type { TestFn } from 'ava';
import { Receiver } from './receiver.js';
import { Service, uniqueName, type ServiceOptions } from './service.js';

export interface UseServiceOptions extends ServiceOptions {
  /** Start a webhook receiver beside the service. */
  receiver?: boolean;
}

export interface SharedService {
  /** The service; throws before `test.before` has started it. */
  readonly service: Service;
  /** The receiver; throws unless asked for and started. */
  readonly receiver: Receiver;
  /** A test-mode (or live) key of a fresh project named `name` and a random suffix. */
  key(name?: string, livemode?: boolean): Promise<string>;
}

export function useService<Context>(test: TestFn<Context>, options: UseServiceOptions = {}): SharedService {
  const { receiver: wantReceiver = false, ...serviceOptions } = options;
  let service: Service | undefined;
  let receiver: Receiver | undefined;

  test.before(async () => {
    // Each assigned as it starts: one that fails leaves the other to be stopped below.
    await Promise.all([
      Service.start(serviceOptions).then((started) => (service = started)),
      wantReceiver ? Receiver.start().then((started) => (receiver = started)) : undefined,
    ]);
  });
  test.after.always(async () => {
    await Promise.all([service?.stop(), receiver?.close()]);
  });

  const started = (): Service => {
    if (!service) throw new Error('the service is not started yet: read it inside a test or hook');
    return service;
  };
  return {
    get service(): Service {
      return started();
    },
    get receiver(): Receiver {
      if (!receiver) throw new Error(wantReceiver ? 'the receiver is not started yet' : 'useService was not asked for a receiver');
      return receiver;
    },
    key: (name = 'p', livemode = false) => started().issueKey(uniqueName(name), livemode),
  };
}

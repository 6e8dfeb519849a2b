/**
 * Live payouts' black-box tests (test/e2e/payouts/live-payouts.test.ts, callbacks.test.ts):
 * the three operators' fakes, a service that reaches them, and a live balance funded
 * by a payment at MTN (XOF) and one at M-Pesa (KES), each approved by its payer.
 */
import { MpesaFake } from '../fakes/mpesa-fake.js';
import { MtnMomoFake } from '../fakes/mtn-momo-fake.js';
import { WaveFake } from '../fakes/wave-fake.js';
import { mtnReferenceId } from '../../worker/operators/mtn-momo/wire.js';
import { liveOperatorsEnv, MPESA, MTN, MTN_ENVIRONMENT, WAVE } from './live-operators.js';
import { confirm, createIntent, phone, waitForStatus } from './payment-intent-lifecycle.js';
import { createPayout, type Payout } from './payouts.js';
import { Service, uniqueName, until } from './service.js';

export class LivePayouts {
  private numbers = 0;

  private constructor(
    readonly mtn: MtnMomoFake,
    readonly mpesa: MpesaFake,
    readonly wave: WaveFake,
    readonly service: Service,
    readonly key: string,
  ) {}

  /** The fakes, the service (with `env` added) and a live key of project `name`, its balance funded. */
  static async start(name: string, env: Record<string, string>): Promise<LivePayouts> {
    const [mtn, mpesa, wave] = await Promise.all([new MtnMomoFake(MTN_ENVIRONMENT, MTN).start(), new MpesaFake(MPESA).start(), new WaveFake(WAVE.apiKey, WAVE.webhookSecret).start()]);
    const service = await Service.start({ workers: 1, env: { WRITE_TIMEOUT_MS: '30000', PUBLIC_BASE_URL: 'self', ...liveOperatorsEnv({ mtn, mpesa, wave }), ...env } });
    wave.webhookUrl = `${service.baseUrl}/operators/wave/webhook`;
    const live = new LivePayouts(mtn, mpesa, wave, service, await service.issueKey(uniqueName(name), true));
    await live.fund();
    return live;
  }

  /** A payer's or payee's number never used before, in the country of `callingCode` (254: Kenya, else through `phone`). */
  fresh(callingCode: string): string {
    return callingCode === '254' ? `+2547${String(++this.numbers).padStart(8, '0')}` : phone(callingCode, '000', ++this.numbers);
  }

  /** A payout created, or the test fails. */
  async payout(body: Record<string, unknown>): Promise<Payout> {
    const res = await createPayout(this.service, this.key, body);
    if (res.status !== 200) throw new Error(`payout refused: ${res.text}`);
    return res.body as Payout;
  }

  async stop(): Promise<void> {
    await this.service.stop();
    await Promise.all([this.mtn.stop(), this.mpesa.stop(), this.wave.stop()]);
  }

  /** 1,000,000 XOF by MTN and 1,000,000 KES by M-Pesa, both recorded. */
  private async fund(): Promise<void> {
    const { service, key, mtn, mpesa } = this;
    const xof = await createIntent(service, key, { amount: 1_000_000, currency: 'xof' });
    await confirm(service, key, xof.id, { operator: 'mtn_momo', phone_number: this.fresh('225') });
    const ref = mtnReferenceId(`${xof.id}:1`);
    await until('MTN to hold the request', () => mtn.transfers.get(ref));
    await mtn.settle(ref);
    await waitForStatus(service, key, xof.id, 'succeeded');
    const kes = await createIntent(service, key, { amount: 1_000_000, currency: 'kes' });
    await confirm(service, key, kes.id, { operator: 'mpesa', phone_number: this.fresh('254') });
    const push = await until('the push', () => mpesa.pushFor(`${kes.id}:1`), 20_000);
    await mpesa.settle(push.checkoutRequestId);
    await waitForStatus(service, key, kes.id, 'succeeded');
    await until('the payments to be recorded', async () => {
      const res = await service.request('GET', '/v1/events?type=payment_intent.succeeded', { key });
      return (res.body.data as unknown[]).length >= 2 ? true : undefined;
    });
  }
}

/**
 * The live accounts of the black-box tests that run live mode against the operators'
 * fakes (test/fakes/): one MTN MoMo account (Côte d'Ivoire), one Daraja account, one
 * Wave account, their credentials, and the variables that point a service at them.
 */
import type { MpesaFake } from '../fakes/mpesa-fake.js';
import type { MtnMomoFake } from '../fakes/mtn-momo-fake.js';
import type { WaveFake } from '../fakes/wave-fake.js';

export const MTN = {
  collection: { subscriptionKey: 'col-sub-key-0001', userId: '0b4c6d3e-1111-4a2b-8c3d-000000000001', apiKey: 'col-api-key-secret-0001' },
  disbursement: { subscriptionKey: 'dis-sub-key-0002', userId: '0b4c6d3e-2222-4a2b-8c3d-000000000002', apiKey: 'dis-api-key-secret-0002' },
};
export const MTN_ENVIRONMENT = 'mtnivorycoast';
export const MPESA = {
  consumerKey: 'consumer-key-abcdef', consumerSecret: 'consumer-secret-123456', shortcode: '174379',
  passkey: 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919', initiatorName: 'testapi', securityCredential: 'encrypted-credential-xyz',
};
export const WAVE = { apiKey: 'wave_sn_prod_secretkey0001', webhookSecret: 'wave_sn_WHS_secret0001' };

/** The MTN_MOMO_*, MPESA_* and WAVE_* groups, each pointing at its fake. */
export function liveOperatorsEnv(fakes: { mtn: MtnMomoFake; mpesa: MpesaFake; wave: WaveFake }): Record<string, string> {
  return {
    MTN_MOMO_BASE_URL: fakes.mtn.url,
    MTN_MOMO_TARGET_ENVIRONMENT: MTN_ENVIRONMENT,
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: MTN.collection.subscriptionKey,
    MTN_MOMO_COLLECTION_USER_ID: MTN.collection.userId,
    MTN_MOMO_COLLECTION_API_KEY: MTN.collection.apiKey,
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: MTN.disbursement.subscriptionKey,
    MTN_MOMO_DISBURSEMENT_USER_ID: MTN.disbursement.userId,
    MTN_MOMO_DISBURSEMENT_API_KEY: MTN.disbursement.apiKey,
    MPESA_BASE_URL: fakes.mpesa.url,
    MPESA_CONSUMER_KEY: MPESA.consumerKey,
    MPESA_CONSUMER_SECRET: MPESA.consumerSecret,
    MPESA_SHORTCODE: MPESA.shortcode,
    MPESA_PASSKEY: MPESA.passkey,
    MPESA_INITIATOR_NAME: MPESA.initiatorName,
    MPESA_SECURITY_CREDENTIAL: MPESA.securityCredential,
    WAVE_BASE_URL: fakes.wave.url,
    WAVE_API_KEY: WAVE.apiKey,
    WAVE_WEBHOOK_SECRET: WAVE.webhookSecret,
  };
}

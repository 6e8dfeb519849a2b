import test from 'ava';
import { signWebhook } from '../../../common/webhooks/sign.js';

test('a signature is v1, then the base64 HMAC-SHA256 of id.timestamp.body keyed with the decoded secret', (t) => {
  // Test vector from the Standard Webhooks specification.
  const vectorSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const signature = signWebhook(vectorSecret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
  t.is(signature, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

/**
 * A payment intent's token in Redis: replaced before and after every write of the
 * intent (worker/lifecycle/transition.ts, worker/refunds/ledger.ts), so that an api
 * may keep the intent as it read it under a token and answer a retrieve from memory
 * while the token is unchanged (common/kept-intents.ts). The protocol of the fan-out's
 * endpoint lists (docs/decisions/0018-kept-endpoint-lists.md), per intent:
 *
 * - An intent read while a write was on its way was read under the first token, and
 *   is dropped at the second, which is set before the write's job answers: once a
 *   change is answered, no retrieve shows the intent without it.
 * - A write whose second replacement never ran (its worker died, Redis failed) is
 *   finished by its job's retry, which replaces the token again.
 * - The token lives `INTENT_TOKEN_TTL_MS` after its last replacement: an intent
 *   nobody changes gets a new one from its next reader.
 */
import { randomBase62 } from './ids.js';

export const INTENT_TOKEN_TTL_MS = 10 * 60_000;

export function intentTokenKey(prefix: string, paymentIntent: string): string {
  // Hash-tagged by the intent: its lock's scripts set it (worker/record-lock.ts), one slot on a cluster.
  return `${prefix}:intent-token:{${paymentIntent}}`;
}

/** From the pooled random bytes of common/ids.ts: a token is drawn for every write of an intent. */
export const freshIntentToken = (): string => randomBase62(12);

/**
 * A replacement of the intent's token: sent with the intent lock's own commands
 * (worker/record-lock.ts, `AlsoSet`), by the fence right before each write and by
 * the release after it.
 */
export function intentTokenReplacement(prefix: string, paymentIntent: string): { key: string; value: string; px: number } {
  return { key: intentTokenKey(prefix, paymentIntent), value: freshIntentToken(), px: INTENT_TOKEN_TTL_MS };
}

/**
 * Where a redirect flow sends the payer back: the intent's `return_url` with
 * `payment_intent=pi_…` and `payment_intent_client_secret=…` added to its query, as
 * Stripe's redirects do, so the merchant's page knows which intent to look at. The
 * URL's own query and fragment are kept byte for byte
 * (`https://shop.example/back?order=7#top` →
 * `https://shop.example/back?order=7&payment_intent=pi_…&payment_intent_client_secret=…#top`).
 */
export function returnUrlFor(returnUrl: string, intent: { id: string; clientSecret: string }): string {
  const hash = returnUrl.indexOf('#');
  const base = hash === -1 ? returnUrl : returnUrl.slice(0, hash);
  const fragment = hash === -1 ? '' : returnUrl.slice(hash);
  const query = `payment_intent=${encodeURIComponent(intent.id)}&payment_intent_client_secret=${encodeURIComponent(intent.clientSecret)}`;
  const separator = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return `${base}${separator}${query}${fragment}`;
}

/**
 * The portal's only way to the data: HTTP to this api process's own `/v1`, with the
 * session's secret key, exactly as a merchant's code calls it (the same auth, scope,
 * rate limit and idempotency). The key stays on the server: the page's script never
 * sees it. Every write carries an `Idempotency-Key` made from the form it came from,
 * so a form sent twice (a double click, a reload) is one write.
 */
export interface V1Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the /v1 JSON, read by the pages
  body: any;
  /** The error envelope's message, on a 4xx or 5xx. */
  error: string | null;
  /** The answer as sent (the statement download passes CSV through). */
  text: string;
  contentType: string;
}

export class V1Client {
  /** Whether `/v1` refused the key (401): revoked since the sign-in. */
  unauthorized = false;

  constructor(
    private readonly baseUrl: () => string | null,
    private secret: string,
  ) {}

  /** Calls from now on use this key (the session's key was just rolled). */
  useSecret(secret: string): void {
    this.secret = secret;
  }

  async call(method: 'GET' | 'POST' | 'DELETE', path: string, options: { body?: Record<string, unknown>; idempotencyKey?: string; query?: Record<string, string | number | null | undefined> } = {}): Promise<V1Answer> {
    const base = this.baseUrl();
    if (base === null) throw new Error('the portal has no address of its own api yet');
    const url = new URL(path, base);
    for (const [name, value] of Object.entries(options.query ?? {})) if (value !== null && value !== undefined && value !== '') url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { Authorization: `Bearer ${this.secret}` };
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
    const res = await fetch(url, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), signal: AbortSignal.timeout(60_000) });
    const text = await res.text();
    if (res.status === 401) this.unauthorized = true;
    const contentType = res.headers.get('content-type') ?? '';
    let body: unknown = null;
    if (contentType.startsWith('application/json')) {
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
    }
    const error = res.status >= 400 ? String((body as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${res.status}`) : null;
    return { status: res.status, body, error, text, contentType };
  }

  get(path: string, query?: Record<string, string | number | null | undefined>): Promise<V1Answer> {
    return this.call('GET', path, { query });
  }

  post(path: string, body: Record<string, unknown>, idempotencyKey?: string): Promise<V1Answer> {
    return this.call('POST', path, { body, idempotencyKey });
  }
}

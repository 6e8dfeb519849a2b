/**
 * The subset of Stripe's search query language that `GET /v1/payment_intents/search`
 * takes (DESIGN section 18; https://docs.stripe.com/search#search-query-language):
 * clauses joined by `AND`, each `field:value` (equality) or, for numbers,
 * `field>n`, `field<n`, `field>=n`, `field<=n`.
 *
 *   status:'succeeded' AND metadata['order_id']:'A-77' AND created>1700000000
 *   phone_last4:'4321' AND currency:'xof' AND amount>=5000
 *
 * Strings are quoted with `'` or `"` (a backslash escapes the quote); numbers are
 * plain digits. `OR`, negation (`-field:…`) and substring match (`~`) are refused
 * with a message saying so, rather than read as something else.
 */

export type SearchField = 'status' | 'currency' | 'phone_last4' | 'amount' | 'created' | 'metadata';
export type SearchOperator = ':' | '>' | '<' | '>=' | '<=';

export interface SearchClause {
  field: SearchField;
  /** The metadata key, for `metadata['key']`. */
  key?: string;
  op: SearchOperator;
  value: string | number;
}

/** A query the language does not allow; `message` says where and why. */
export class SearchQueryError extends Error {}

const STRING_FIELDS = new Set<SearchField>(['status', 'currency', 'phone_last4', 'metadata']);
const NUMBER_FIELDS = new Set<SearchField>(['amount', 'created']);
const FIELDS = [...STRING_FIELDS, ...NUMBER_FIELDS];
/** At most this many clauses: a query is a handful of terms, never a program. */
export const MAX_CLAUSES = 10;

class Reader {
  pos = 0;
  constructor(readonly text: string) {}

  get done(): boolean {
    return this.pos >= this.text.length;
  }

  skipSpaces(): void {
    while (!this.done && /\s/.test(this.text[this.pos] as string)) this.pos++;
  }

  fail(why: string): never {
    throw new SearchQueryError(`${why} (at character ${this.pos + 1} of the query)`);
  }

  quoted(): string {
    const quote = this.text[this.pos];
    if (quote !== "'" && quote !== '"') this.fail('expected a quoted value');
    this.pos++;
    let out = '';
    for (;;) {
      if (this.done) this.fail('a quoted value is not closed');
      const ch = this.text[this.pos++] as string;
      if (ch === '\\' && !this.done) out += this.text[this.pos++];
      else if (ch === quote) return out;
      else out += ch;
    }
  }
}

function clause(r: Reader): SearchClause {
  r.skipSpaces();
  if (r.text[r.pos] === '-') r.fail('negation (-) is not supported');
  const name = /^[a-z_0-9]+/.exec(r.text.slice(r.pos))?.[0];
  if (!name) r.fail('expected a field name');
  if (!(FIELDS as string[]).includes(name)) r.fail(`unknown field ${name}; fields: ${FIELDS.join(', ')}`);
  r.pos += name.length;
  const field = name as SearchField;
  let key: string | undefined;
  if (field === 'metadata') {
    if (r.text[r.pos] !== '[') r.fail("metadata takes a key: metadata['key']");
    r.pos++;
    key = r.quoted();
    if (r.text[r.pos] !== ']') r.fail("expected ] after the metadata key");
    r.pos++;
  }
  const op = /^(>=|<=|:|>|<|~)/.exec(r.text.slice(r.pos))?.[0];
  if (!op) r.fail('expected :, >, <, >= or <=');
  if (op === '~') r.fail('substring match (~) is not supported');
  r.pos += op.length;
  if (STRING_FIELDS.has(field)) {
    if (op !== ':') r.fail(`${field} takes an exact match (:) only`);
    return { field, ...(key !== undefined ? { key } : {}), op, value: r.quoted() };
  }
  const digits = /^[0-9]{1,15}/.exec(r.text.slice(r.pos))?.[0];
  if (!digits) r.fail(`${field} takes a whole number`);
  r.pos += digits.length;
  return { field, op: op as SearchOperator, value: Number(digits) };
}

/** Parses `query` into its clauses, all of which must hold; throws SearchQueryError. */
export function parseSearchQuery(query: string): SearchClause[] {
  const r = new Reader(query);
  const clauses: SearchClause[] = [];
  r.skipSpaces();
  if (r.done) r.fail('the query is empty');
  for (;;) {
    clauses.push(clause(r));
    if (clauses.length > MAX_CLAUSES) r.fail(`at most ${MAX_CLAUSES} clauses`);
    const before = r.pos;
    r.skipSpaces();
    if (r.done) return clauses;
    if (r.pos === before) r.fail('expected a space then AND between clauses');
    const word = /^[A-Za-z]+/.exec(r.text.slice(r.pos))?.[0];
    if (word === 'OR') r.fail('OR is not supported; join clauses with AND');
    if (word !== 'AND') r.fail('expected AND between clauses');
    r.pos += 3;
    if (!/^\s/.test(r.text.slice(r.pos))) r.fail('expected a space after AND');
  }
}

const RANGE: Record<Exclude<SearchOperator, ':'>, string> = { '>': '$gt', '<': '$lt', '>=': '$gte', '<=': '$lte' };

/**
 * The MongoDB filter of the clauses, beside the scope (project, livemode): every
 * clause is an equality or a range on a field an index of common/mongo.ts leads
 * with after the scope. `created` also bounds `_id` (ids begin with their time;
 * `idFloor(ms)` is the smallest id of that millisecond), a day either way, so a
 * range of dates is a range of the scope's `_id` index on any store.
 * `elemMatch`: the store takes `$elemMatch` with field conditions.
 */
export function searchFilter(clauses: SearchClause[], idFloor: (ms: number) => string, options: { elemMatch: boolean }): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  const and: Array<Record<string, unknown>> = [];
  const DAY_MS = 86_400_000;
  for (const c of clauses) {
    switch (c.field) {
      case 'status':
      case 'currency':
        and.push({ [c.field]: c.field === 'currency' ? String(c.value).toLowerCase() : c.value });
        break;
      case 'phone_last4':
        and.push({ 'payment.phone_last4': c.value });
        break;
      case 'metadata':
        // Without `$elemMatch` (the local stack's store lacks it) the key and the value
        // may match two pairs: the caller keeps only documents with the pair itself
        // (`matchesMetadata`).
        and.push(options.elemMatch ? { metadata: { $elemMatch: { k: c.key, v: c.value } } } : { 'metadata.k': c.key, 'metadata.v': c.value });
        break;
      case 'amount':
      case 'created': {
        const value = c.value as number;
        and.push({ [c.field]: c.op === ':' ? value : { [RANGE[c.op]]: value } });
        if (c.field === 'created') {
          const ms = value * 1000;
          if (c.op === ':' || c.op === '>' || c.op === '>=') and.push({ _id: { $gte: idFloor(ms - DAY_MS) } });
          if (c.op === ':' || c.op === '<' || c.op === '<=') and.push({ _id: { $lt: idFloor(ms + DAY_MS) } });
        }
        break;
      }
    }
  }
  if (and.length === 1) return { ...filter, ...and[0] };
  return and.length === 0 ? filter : { $and: and };
}

/** Whether `metadata` holds every pair the clauses ask for, each as one pair. */
export function matchesMetadata(clauses: SearchClause[], metadata: Array<{ k: string; v: string }>): boolean {
  return clauses.every((c) => c.field !== 'metadata' || metadata.some((pair) => pair.k === c.key && pair.v === c.value));
}

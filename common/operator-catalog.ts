/**
 * The operator catalog (DESIGN.md section 10): every operator this service knows and,
 * per country it serves, the calling code, the number prefixes its wallets use, the
 * currencies it takes there and the bounds of one payment. It is the one source for
 * confirm's checks (worker/lifecycle/decide.ts), the test-mode simulator, the
 * connectors of live mode, `automatic_operator`, `GET /v1/operators` and the docs
 * (docs/payments.md, "Operators and countries", checked against it by a test).
 *
 * Prefixes are the national destination codes that the numbering plans allocate to
 * each mobile network, written as the digits that follow the calling code in E.164.
 * Sources (the regulator's national numbering plan, as notified to the ITU under
 * ITU-T E.164; `source` on each country below names it):
 *
 * | Country | Calling code | Digits after it | Plan |
 * |---|---|---|---|
 * | SN Senegal | 221 | 9 | ARTP, Plan national de numérotation |
 * | ML Mali | 223 | 8 | AMRTP, Plan national de numérotation (8 digits since 2008: Orange mobiles 7, Malitel/Moov 6 and 9) |
 * | GN Guinea | 224 | 9 | ARPT, Plan national de numérotation |
 * | CI Côte d'Ivoire | 225 | 10 | ARTCI, Plan national de numérotation à 10 chiffres (31 January 2021: Moov 01, MTN 05, Orange 07) |
 * | BF Burkina Faso | 226 | 8 | ARCEP Burkina Faso, Plan national de numérotation |
 * | TG Togo | 228 | 8 | ARCEP Togo, Plan national de numérotation |
 * | BJ Benin | 229 | 10 | ARCEP Bénin, Plan national de numérotation à 10 chiffres (30 November 2024: mobiles 01 + the former 8 digits) |
 * | GH Ghana | 233 | 9 | NCA, National Numbering Plan |
 * | NG Nigeria | 234 | 10 | NCC, National Numbering Plan |
 * | CM Cameroon | 237 | 9 | ART, Plan de numérotation à 9 chiffres (2014: mobiles 6 + the former 8 digits; MTN 67, Orange 69) |
 * | CD DR Congo | 243 | 9 | ARPTC, Plan national de numérotation |
 * | RW Rwanda | 250 | 9 | RURA, National Numbering Plan |
 * | KE Kenya | 254 | 9 | Communications Authority of Kenya, Telecommunication Numbering Plan for Kenya (CA/LCS/NNP/OCT/2019) |
 * | TZ Tanzania | 255 | 9 | TCRA, National Numbering Plan |
 * | UG Uganda | 256 | 9 | UCC, National Numbering Plan |
 * | ZM Zambia | 260 | 9 | ZICTA, National Numbering Plan |
 *
 * A prefix predicts the operator; it does not prove it. Numbers move between
 * operators where the country has number portability (Kenya, Ghana, Nigeria,
 * Uganda…), so a confirm that names an operator is never refused for its prefix.
 * Wave is a wallet, not a network: any number of a country it serves can hold one
 * (`prefixes: null`).
 *
 * Amount bounds are per payment, in the currency's minor unit (common/money.ts):
 * what each operator accepts for one merchant payment, from its published tariffs
 * and limits where they are published, and deliberately within them where not, so
 * a payment the catalog admits is one the operator takes.
 *
 * Refunds (section 11), from each operator's API documentation:
 * - `mtn_momo` `partial`: MoMo API Disbursement `refund` takes an amount.
 * - `mpesa` `full`: Daraja's Reversal API reverses a whole transaction.
 * - `wave` `full`: Checkout API refund of a completed checkout session returns its
 *   whole amount.
 * - `airtel_money` `full`: Airtel Money API Collection refund takes the original
 *   transaction's id and no amount.
 * - `orange_money`, `moov_money` `none`: no refund API is published for merchant
 *   payments.
 */
import { currencyExponent } from './money.js';

export type PaymentFlow = 'phone_approval' | 'redirect' | 'otp';
export type RefundSupport = 'partial' | 'full' | 'none';

/** What one operator offers in one country (for one set of currencies with shared bounds). */
export interface CountryTerms {
  /** ISO 3166-1 alpha-2. */
  country: string;
  /** Without `+`. */
  callingCode: string;
  /** Leading digits after the calling code of this operator's numbers; null: any number of the country. */
  prefixes: readonly string[] | null;
  /** Lower-case ISO 4217 codes. */
  currencies: readonly string[];
  /** Smallest and largest payment, in minor units, inclusive. */
  minAmount: number;
  maxAmount: number;
}

export interface OperatorEntry {
  id: string;
  name: string;
  flow: PaymentFlow;
  refunds: RefundSupport;
  countries: readonly CountryTerms[];
}

export interface Country {
  code: string;
  name: string;
  callingCode: string;
  /** Digits of a national number after the calling code. */
  nationalLength: number;
  /** The numbering plan the prefixes come from. */
  source: string;
}

/** Every country of the catalog, by calling code. */
export const COUNTRIES: readonly Country[] = [
  { code: 'SN', name: 'Senegal', callingCode: '221', nationalLength: 9, source: 'ARTP, Plan national de numérotation' },
  { code: 'ML', name: 'Mali', callingCode: '223', nationalLength: 8, source: 'AMRTP, Plan national de numérotation' },
  { code: 'GN', name: 'Guinea', callingCode: '224', nationalLength: 9, source: 'ARPT, Plan national de numérotation' },
  { code: 'CI', name: "Côte d'Ivoire", callingCode: '225', nationalLength: 10, source: 'ARTCI, Plan national de numérotation à 10 chiffres (2021)' },
  { code: 'BF', name: 'Burkina Faso', callingCode: '226', nationalLength: 8, source: 'ARCEP Burkina Faso, Plan national de numérotation' },
  { code: 'TG', name: 'Togo', callingCode: '228', nationalLength: 8, source: 'ARCEP Togo, Plan national de numérotation' },
  { code: 'BJ', name: 'Benin', callingCode: '229', nationalLength: 10, source: 'ARCEP Bénin, Plan national de numérotation à 10 chiffres (2024)' },
  { code: 'GH', name: 'Ghana', callingCode: '233', nationalLength: 9, source: 'NCA, National Numbering Plan' },
  { code: 'NG', name: 'Nigeria', callingCode: '234', nationalLength: 10, source: 'NCC, National Numbering Plan' },
  { code: 'CM', name: 'Cameroon', callingCode: '237', nationalLength: 9, source: 'ART, Plan de numérotation à 9 chiffres (2014)' },
  { code: 'CD', name: 'DR Congo', callingCode: '243', nationalLength: 9, source: 'ARPTC, Plan national de numérotation' },
  { code: 'RW', name: 'Rwanda', callingCode: '250', nationalLength: 9, source: 'RURA, National Numbering Plan' },
  { code: 'KE', name: 'Kenya', callingCode: '254', nationalLength: 9, source: 'Communications Authority of Kenya, Telecommunication Numbering Plan (2019)' },
  { code: 'TZ', name: 'Tanzania', callingCode: '255', nationalLength: 9, source: 'TCRA, National Numbering Plan' },
  { code: 'UG', name: 'Uganda', callingCode: '256', nationalLength: 9, source: 'UCC, National Numbering Plan' },
  { code: 'ZM', name: 'Zambia', callingCode: '260', nationalLength: 9, source: 'ZICTA, National Numbering Plan' },
];

const BY_CODE = new Map(COUNTRIES.map((c) => [c.code, c]));

/** The terms of one country; the calling code is the country's. */
function terms(country: string, prefixes: readonly string[] | null, currencies: readonly string[], minAmount: number, maxAmount: number): CountryTerms {
  const known = BY_CODE.get(country);
  if (!known) throw new Error(`operator catalog: unknown country ${country}`);
  return { country, callingCode: known.callingCode, prefixes, currencies, minAmount, maxAmount };
}

const range = (from: number, to: number, width = 2): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => String(from + i).padStart(width, '0'));

/** Benin's mobile numbers since 2024: `01` followed by the former two-digit prefix. */
const benin = (prefixes: readonly string[]): string[] => prefixes.map((p) => `01${p}`);

/** One minor-unit bound per major-unit amount, so the table reads in the currency's own units. */
const major = (amount: number, currency: string): number => amount * 10 ** currencyExponent(currency);

const xof = (min: number, max: number) => [['xof'], min, max] as const;

/** The catalog, in catalog order (the default `OPERATORS` and `allowed_operators`). */
export const OPERATOR_CATALOG: readonly OperatorEntry[] = [
  {
    id: 'mtn_momo',
    name: 'MTN Mobile Money',
    flow: 'phone_approval',
    refunds: 'partial',
    countries: [
      terms('GN', ['66'], ['gnf'], 1_000, 10_000_000),
      terms('CI', ['05'], ...xof(100, 1_500_000)),
      terms('BJ', benin(['42', '46', '50', '51', '52', '53', '54', '56', '57', '59', '61', '62', '66', '67', '69', '90', '91', '96', '97']), ...xof(100, 2_000_000)),
      terms('GH', ['24', '25', '53', '54', '55', '59'], ['ghs'], major(1, 'ghs'), major(10_000, 'ghs')),
      terms('NG', ['703', '706', '803', '806', '810', '813', '814', '816', '903', '906', '913', '916'], ['ngn'], major(50, 'ngn'), major(500_000, 'ngn')),
      terms('CM', ['67', '650', '651', '652', '653', '654'], ['xaf'], 100, 1_000_000),
      terms('RW', ['78', '79'], ['rwf'], 100, 2_000_000),
      terms('UG', ['76', '77', '78'], ['ugx'], 500, 5_000_000),
      terms('ZM', ['76', '96'], ['zmw'], major(1, 'zmw'), major(10_000, 'zmw')),
    ],
  },
  {
    id: 'orange_money',
    name: 'Orange Money',
    flow: 'otp',
    refunds: 'none',
    countries: [
      terms('SN', ['77', '78'], ...xof(100, 2_000_000)),
      terms('ML', ['7'], ...xof(100, 2_000_000)),
      terms('GN', ['61', '62'], ['gnf'], 1_000, 10_000_000),
      terms('CI', ['07'], ...xof(100, 1_500_000)),
      terms('BF', ['05', '06', '07', '54', '55', '56', '57', '64', '65', '66', '67', '74', '75', '76', '77'], ...xof(100, 2_000_000)),
      terms('CM', ['69', '655', '656', '657', '658', '659'], ['xaf'], 100, 1_000_000),
      terms('CD', ['80', '84', '85', '89'], ['cdf'], major(100, 'cdf'), major(5_000_000, 'cdf')),
      terms('CD', ['80', '84', '85', '89'], ['usd'], major(1, 'usd'), major(2_500, 'usd')),
    ],
  },
  {
    id: 'moov_money',
    name: 'Moov Money',
    flow: 'phone_approval',
    refunds: 'none',
    countries: [
      terms('ML', ['6', '9'], ...xof(100, 2_000_000)),
      terms('CI', ['01'], ...xof(100, 1_500_000)),
      terms('BF', ['01', '02', '50', '51', '52', '53', '60', '61', '62', '63', '70', '71', '72', '73'], ...xof(100, 2_000_000)),
      terms('TG', ['79', '96', '97', '98', '99'], ...xof(100, 2_000_000)),
      terms('BJ', benin(['45', '55', '58', '60', '63', '64', '65', '68', '94', '95', '98', '99']), ...xof(100, 2_000_000)),
    ],
  },
  {
    id: 'wave',
    name: 'Wave',
    flow: 'redirect',
    refunds: 'full',
    countries: [
      terms('SN', null, ...xof(100, 2_000_000)),
      terms('ML', null, ...xof(100, 2_000_000)),
      terms('CI', null, ...xof(100, 2_000_000)),
      terms('BF', null, ...xof(100, 2_000_000)),
    ],
  },
  {
    id: 'airtel_money',
    name: 'Airtel Money',
    flow: 'phone_approval',
    refunds: 'full',
    countries: [
      terms('GH', ['26', '27', '56', '57'], ['ghs'], major(1, 'ghs'), major(10_000, 'ghs')),
      terms('NG', ['701', '708', '802', '808', '812', '901', '902', '904', '907', '912'], ['ngn'], major(50, 'ngn'), major(500_000, 'ngn')),
      terms('CD', ['97', '98', '99'], ['cdf'], major(100, 'cdf'), major(5_000_000, 'cdf')),
      terms('CD', ['97', '98', '99'], ['usd'], major(1, 'usd'), major(2_500, 'usd')),
      terms('RW', ['72', '73'], ['rwf'], 100, 2_000_000),
      terms('KE', [...range(730, 739), ...range(750, 756), '762', ...range(780, 789), '100', '101', '102'], ['kes'], major(10, 'kes'), major(150_000, 'kes')),
      terms('TZ', ['68', '69', '78'], ['tzs'], major(1_000, 'tzs'), major(5_000_000, 'tzs')),
      terms('UG', ['70', '74', '75'], ['ugx'], 500, 5_000_000),
      terms('ZM', ['77', '97'], ['zmw'], major(1, 'zmw'), major(10_000, 'zmw')),
    ],
  },
  {
    id: 'mpesa',
    name: 'M-Pesa',
    flow: 'phone_approval',
    refunds: 'full',
    countries: [
      terms('CD', ['81', '82', '83'], ['cdf'], major(100, 'cdf'), major(5_000_000, 'cdf')),
      terms('CD', ['81', '82', '83'], ['usd'], major(1, 'usd'), major(2_500, 'usd')),
      terms('KE', ['70', '71', '72', ...range(740, 743), '745', '746', '748', ...range(757, 759), '768', '769', '79', ...range(110, 115)], ['kes'], major(1, 'kes'), major(250_000, 'kes')),
      terms('TZ', ['74', '75', '76'], ['tzs'], major(1_000, 'tzs'), major(5_000_000, 'tzs')),
    ],
  },
];

const BY_ID = new Map(OPERATOR_CATALOG.map((entry) => [entry.id, entry]));

/** The ids of the catalog, in catalog order. */
export const CATALOG_OPERATORS: readonly string[] = OPERATOR_CATALOG.map((entry) => entry.id);

/** The catalog's entry of `operator`, or null for a name it does not know. */
export function catalogEntry(operator: string): OperatorEntry | null {
  return BY_ID.get(operator) ?? null;
}

/** How the payer approves with `operator`; phone approval for a name the catalog does not know. */
export function flowOf(operator: string): PaymentFlow {
  return catalogEntry(operator)?.flow ?? 'phone_approval';
}

/** The country of an E.164 number, by its calling code, or null when the catalog serves none there. */
export function countryOf(phone: string): Country | null {
  const digits = phone.startsWith('+') ? phone.slice(1) : phone;
  return COUNTRIES.find((c) => digits.startsWith(c.callingCode)) ?? null;
}

/** Every set of terms `operator` offers in `country` (one per set of currencies); empty when it does not serve it. */
export function termsIn(operator: string, country: string): CountryTerms[] {
  return (catalogEntry(operator)?.countries ?? []).filter((t) => t.country === country);
}

/** The terms under which `operator` takes `currency` in `country`, or null. */
export function termsFor(operator: string, country: string, currency: string): CountryTerms | null {
  const lower = currency.toLowerCase();
  return termsIn(operator, country).find((t) => t.currencies.includes(lower)) ?? null;
}

/** Every currency `operator` takes in `country`, lower case, in catalog order. */
export function currenciesIn(operator: string, country: string): string[] {
  return [...new Set(termsIn(operator, country).flatMap((t) => t.currencies))];
}

/** The refunds `operator` supports in `country`: `none` where it does not serve. */
export function refundSupport(operator: string, country: string): RefundSupport {
  const entry = catalogEntry(operator);
  if (!entry || termsIn(operator, country).length === 0) return 'none';
  return entry.refunds;
}

/** The operators serving `country`, in catalog order. */
export function operatorsServing(country: string): string[] {
  return OPERATOR_CATALOG.filter((entry) => entry.countries.some((t) => t.country === country)).map((entry) => entry.id);
}

export interface NumberResolution {
  country: Country | null;
  /** The network whose prefix the number carries, or null when no prefix of the catalog matches. */
  operator: string | null;
  /**
   * Operators that may hold a wallet on this number, in catalog order: the prefix's
   * network and the wallets open to any number of the country (wave); every
   * operator of the country when the prefix is unknown.
   */
  candidates: string[];
}

/** Which operator a number belongs to, by its prefix, falling back to its calling code. */
export function resolveNumber(phone: string): NumberResolution {
  const country = countryOf(phone);
  if (country === null) return { country: null, operator: null, candidates: [] };
  const national = (phone.startsWith('+') ? phone.slice(1) : phone).slice(country.callingCode.length);
  const holders: string[] = [];
  const anyNumber: string[] = [];
  for (const entry of OPERATOR_CATALOG) {
    const here = entry.countries.filter((t) => t.country === country.code);
    if (here.length === 0) continue;
    if (here.some((t) => t.prefixes === null)) anyNumber.push(entry.id);
    else if (here.some((t) => t.prefixes!.some((p) => national.startsWith(p)))) holders.push(entry.id);
  }
  if (holders.length === 0) return { country, operator: null, candidates: operatorsServing(country.code) };
  return { country, operator: holders[0] ?? null, candidates: CATALOG_OPERATORS.filter((id) => holders.includes(id) || anyNumber.includes(id)) };
}

/**
 * `automatic_operator`: the first of `allowed` (in its own order) that may hold a
 * wallet on `phone`. The number's prefix decides; when no prefix of the catalog
 * matches it, any operator serving the number's country (its calling code) may.
 */
export function predictOperator(phone: string, allowed: readonly string[]): string | null {
  const { candidates } = resolveNumber(phone);
  return allowed.find((operator) => candidates.includes(operator)) ?? null;
}

/**
 * Live operator accounts (DESIGN section 14, "Accounts per operator and country").
 * Operators issue credentials per country: MTN an API user, keys and a target
 * environment per country; Wave one API key per business wallet; Daraja serves
 * Safaricom Kenya only. An account is one such set of credentials and the countries
 * it serves; a live attempt is sent through the account of its operator and its
 * payer's country, and keeps that account's id, so its checks and refunds go through
 * the same credentials even after another account is added.
 *
 * - The section 12 variables (`MTN_MOMO_*`, `MPESA_*`, `WAVE_*`) configure one
 *   account each: MTN's serves its target environment's country (`sandbox` is MTN's
 *   sandbox: EUR and MTN's test numbers only), M-Pesa's Kenya, Wave's `WAVE_COUNTRY`.
 * - `OPERATOR_ACCOUNTS_FILE` names a JSON array of more accounts, each
 *   `{"operator", "countries": [...], ...that operator's variables}` (the same names,
 *   without the operator's prefix being optional: `MTN_MOMO_BASE_URL` or `base_url`).
 * - A live confirm for an operator and country without an account is 400
 *   `operator_not_configured`, and reaches no operator.
 *
 * Account ids name the operator and what tells its accounts apart (MTN's target
 * environment, Daraja's short code, Wave's countries), never a credential.
 */
import { readFileSync } from 'node:fs';
import type { MpesaConfig, MtnMomoConfig, WaveConfig } from './config.js';
import { NO_FEE, type FeeSchedule } from './ledger.js';

export type LiveOperator = 'mtn_momo' | 'mpesa' | 'wave';

interface AccountBase {
  /** `mtn_momo:mtnghana`, `mpesa:174379`, `wave:SN`: stable, credential-free. */
  id: string;
  /** ISO 3166-1 alpha-2 codes this account serves. */
  countries: readonly string[];
  /** MTN's sandbox: EUR and MTN's test numbers only, whatever the catalog says. */
  sandbox: boolean;
  /**
   * The service's fee on each payment through this account (`fee_percent`, `fee_fixed`
   * in minor units; `<OPERATOR>_FEE_PERCENT`, `<OPERATOR>_FEE_FIXED` for the account of
   * the variables): posted with the payment (DESIGN section 16). None by default.
   */
  fees?: FeeSchedule;
}

export type OperatorAccount =
  | (AccountBase & { operator: 'mtn_momo'; config: MtnMomoConfig })
  | (AccountBase & { operator: 'mpesa'; config: MpesaConfig })
  | (AccountBase & { operator: 'wave'; config: WaveConfig });

/**
 * MTN MoMo's production target environments and the country each serves (MTN's
 * developer portal: one `X-Target-Environment` per country, `mtn<country>`).
 */
export const MTN_TARGET_ENVIRONMENTS: Readonly<Record<string, string>> = {
  mtnivorycoast: 'CI',
  mtnuganda: 'UG',
  mtnghana: 'GH',
  mtncameroon: 'CM',
  mtnbenin: 'BJ',
  mtncongo: 'CG',
  mtnguineaconakry: 'GN',
  mtnzambia: 'ZM',
  mtnrwanda: 'RW',
  mtnnigeria: 'NG',
  mtnliberia: 'LR',
  mtnswaziland: 'SZ',
  mtnsouthafrica: 'ZA',
};

/**
 * MTN's sandbox (MoMoOpenAPI_SandBox, "Test numbers"): EUR only, and the payer
 * numbers 46733123450 to 46733123459 and 56733123450 to 56733123459, each with a
 * fixed outcome (56733123453 succeeds).
 */
export const MTN_SANDBOX = {
  currency: 'eur',
  numbers: /^\+?[45]673312345\d$/,
  minAmount: 1,
  maxAmount: 100_000_00,
} as const;

/** The countries the MTN account of `targetEnvironment` serves: none for `sandbox` (test numbers only) or an unknown one. */
export function mtnCountries(targetEnvironment: string): string[] {
  const country = MTN_TARGET_ENVIRONMENTS[targetEnvironment.toLowerCase()];
  return country ? [country] : [];
}

/** The account of `operator` serving `country` (first configured first), or null. */
export function accountFor(accounts: readonly OperatorAccount[], operator: string, country: string | null, phone?: string): OperatorAccount | null {
  for (const account of accounts) {
    if (account.operator !== operator) continue;
    if (account.sandbox && phone !== undefined && MTN_SANDBOX.numbers.test(phone)) return account;
    if (country !== null && account.countries.includes(country)) return account;
  }
  return null;
}

/** The account named `id`, else the first of `operator` (an attempt from before accounts had ids). */
export function accountById(accounts: readonly OperatorAccount[], id: string | null | undefined, operator: string): OperatorAccount | null {
  return accounts.find((a) => a.id === id) ?? (id ? null : (accounts.find((a) => a.operator === operator) ?? null));
}

/** The operators with at least one account, in DESIGN section 12's order. */
export function operatorsWithAccounts(accounts: readonly OperatorAccount[]): LiveOperator[] {
  return (['mtn_momo', 'mpesa', 'wave'] as const).filter((operator) => accounts.some((a) => a.operator === operator));
}

type Raw = Record<string, unknown>;

const PREFIX: Record<LiveOperator, string> = { mtn_momo: 'MTN_MOMO_', mpesa: 'MPESA_', wave: 'WAVE_' };

/** A variable of a file account: `MTN_MOMO_BASE_URL`, or `base_url`. */
function pick(raw: Raw, operator: LiveOperator, name: string): string | undefined {
  const value = raw[`${PREFIX[operator]}${name}`] ?? raw[name.toLowerCase()];
  if (typeof value === 'number' && name.startsWith('FEE_')) return String(value);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The account's fees from its variables; a malformed one is named in `missing`. */
function feesOf(operator: LiveOperator, vars: (name: string) => string | undefined, missing: string[]): FeeSchedule {
  const percent = vars('FEE_PERCENT');
  const fixed = vars('FEE_FIXED');
  const p = percent === undefined ? 0 : Number(percent);
  const f = fixed === undefined ? 0 : Number(fixed);
  if (!(Number.isFinite(p) && p >= 0 && p <= 100)) missing.push(`${PREFIX[operator]}FEE_PERCENT as a number from 0 to 100`);
  if (!(Number.isSafeInteger(f) && f >= 0)) missing.push(`${PREFIX[operator]}FEE_FIXED as a whole number of minor units`);
  return p === 0 && f === 0 ? NO_FEE : { percent: p, fixed: f };
}

const trimUrl = (url: string) => url.replace(/\/+$/, '');

/** One account from variables (`vars(name)` without the operator's prefix); null when a variable is missing, with `missing` filled. */
export function accountOf(operator: LiveOperator, vars: (name: string) => string | undefined, countries: readonly string[] | null, missing: string[]): OperatorAccount | null {
  const need = (name: string) => {
    const value = vars(name);
    if (value === undefined) missing.push(`${PREFIX[operator]}${name}`);
    return value ?? '';
  };
  const fees = feesOf(operator, vars, missing);
  if (operator === 'mtn_momo') {
    const config: MtnMomoConfig = {
      baseUrl: trimUrl(need('BASE_URL')),
      targetEnvironment: need('TARGET_ENVIRONMENT'),
      collection: { subscriptionKey: need('COLLECTION_SUBSCRIPTION_KEY'), userId: need('COLLECTION_USER_ID'), apiKey: need('COLLECTION_API_KEY') },
      disbursement: { subscriptionKey: need('DISBURSEMENT_SUBSCRIPTION_KEY'), userId: need('DISBURSEMENT_USER_ID'), apiKey: need('DISBURSEMENT_API_KEY') },
    };
    if (missing.length) return null;
    const sandbox = config.targetEnvironment === 'sandbox';
    return { id: `mtn_momo:${config.targetEnvironment}`, operator, countries: countries ?? mtnCountries(config.targetEnvironment), sandbox, fees, config };
  }
  if (operator === 'mpesa') {
    const config: MpesaConfig = {
      baseUrl: trimUrl(need('BASE_URL')),
      consumerKey: need('CONSUMER_KEY'),
      consumerSecret: need('CONSUMER_SECRET'),
      shortcode: need('SHORTCODE'),
      passkey: need('PASSKEY'),
      initiatorName: need('INITIATOR_NAME'),
      securityCredential: need('SECURITY_CREDENTIAL'),
    };
    if (missing.length) return null;
    // Daraja is Safaricom Kenya's: whatever a file says, an M-Pesa account serves Kenya only.
    return { id: `mpesa:${config.shortcode}`, operator, countries: ['KE'], sandbox: false, fees, config };
  }
  const config: WaveConfig = { baseUrl: trimUrl(need('BASE_URL')), apiKey: need('API_KEY'), webhookSecret: need('WEBHOOK_SECRET') };
  if (missing.length) return null;
  const served = countries ?? [(vars('COUNTRY') ?? 'SN').toUpperCase()];
  return { id: `wave:${served.join('+')}`, operator, countries: served, sandbox: false, fees, config };
}

/** The accounts of `OPERATOR_ACCOUNTS_FILE`; throws with every problem found (never a value). */
export function accountsFromFile(path: string): OperatorAccount[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`"OPERATOR_ACCOUNTS_FILE" ${path} could not be read as JSON (${(err as NodeJS.ErrnoException).code ?? 'invalid JSON'})`);
  }
  if (!Array.isArray(parsed)) throw new Error(`"OPERATOR_ACCOUNTS_FILE" ${path} must hold a JSON array of accounts`);
  const problems: string[] = [];
  const accounts: OperatorAccount[] = [];
  parsed.forEach((raw: unknown, index) => {
    const where = `account ${index} of "OPERATOR_ACCOUNTS_FILE"`;
    if (raw === null || typeof raw !== 'object') return void problems.push(`${where} is not an object`);
    const entry = raw as Raw;
    const operator = entry.operator;
    if (operator !== 'mtn_momo' && operator !== 'mpesa' && operator !== 'wave') return void problems.push(`${where}: "operator" must be mtn_momo, mpesa or wave`);
    const countries = entry.countries;
    const list = Array.isArray(countries) && countries.every((c) => typeof c === 'string' && /^[A-Za-z]{2}$/.test(c)) ? countries.map((c: string) => c.toUpperCase()) : null;
    if (countries !== undefined && list === null) return void problems.push(`${where}: "countries" must be a list of two-letter country codes`);
    if (operator === 'mpesa' && list && list.some((c) => c !== 'KE')) return void problems.push(`${where}: M-Pesa (Daraja) serves Kenya only; Vodacom's M-Pesa has no connector yet`);
    const missing: string[] = [];
    const account = accountOf(operator, (name) => pick(entry, operator, name), list, missing);
    if (!account) return void problems.push(`${where} (${operator}) lacks ${missing.join(', ')}`);
    accounts.push(account);
  });
  if (problems.length) throw new Error(problems.join('; '));
  return accounts;
}

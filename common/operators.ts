/**
 * Which operators serve which country, by calling code: what `automatic_operator`
 * uses when a confirm names no operator. The intent's `allowed_operators` are tried
 * in their own order, and the first that serves the phone's country is chosen.
 *
 * | Code | Country | Operators |
 * |---|---|---|
 * | 221 | Senegal | orange_money, wave |
 * | 223 | Mali | orange_money, moov_money, wave |
 * | 224 | Guinea | orange_money, mtn_momo |
 * | 225 | Côte d'Ivoire | orange_money, mtn_momo, moov_money, wave |
 * | 226 | Burkina Faso | orange_money, moov_money, wave |
 * | 228 | Togo | moov_money |
 * | 229 | Benin | mtn_momo, moov_money |
 * | 233 | Ghana | mtn_momo, airtel_money |
 * | 234 | Nigeria | mtn_momo, airtel_money |
 * | 237 | Cameroon | mtn_momo, orange_money |
 * | 243 | DR Congo | mpesa, orange_money, airtel_money |
 * | 250 | Rwanda | mtn_momo, airtel_money |
 * | 254 | Kenya | mpesa, airtel_money |
 * | 255 | Tanzania | mpesa, airtel_money |
 * | 256 | Uganda | mtn_momo, airtel_money |
 * | 260 | Zambia | mtn_momo, airtel_money |
 */
export const OPERATORS_BY_CALLING_CODE: Readonly<Record<string, readonly string[]>> = {
  '221': ['orange_money', 'wave'],
  '223': ['orange_money', 'moov_money', 'wave'],
  '224': ['orange_money', 'mtn_momo'],
  '225': ['orange_money', 'mtn_momo', 'moov_money', 'wave'],
  '226': ['orange_money', 'moov_money', 'wave'],
  '228': ['moov_money'],
  '229': ['mtn_momo', 'moov_money'],
  '233': ['mtn_momo', 'airtel_money'],
  '234': ['mtn_momo', 'airtel_money'],
  '237': ['mtn_momo', 'orange_money'],
  '243': ['mpesa', 'orange_money', 'airtel_money'],
  '250': ['mtn_momo', 'airtel_money'],
  '254': ['mpesa', 'airtel_money'],
  '255': ['mpesa', 'airtel_money'],
  '256': ['mtn_momo', 'airtel_money'],
  '260': ['mtn_momo', 'airtel_money'],
};

/** The calling code of an E.164 number that the table knows (codes here are 3 digits), or null. */
export function callingCode(phone: string): string | null {
  const code = phone.slice(1, 4);
  return Object.hasOwn(OPERATORS_BY_CALLING_CODE, code) ? code : null;
}

/** The first of `allowed` that serves the phone's country, or null. */
export function automaticOperator(phone: string, allowed: readonly string[]): string | null {
  const code = callingCode(phone);
  if (code === null) return null;
  const serving = OPERATORS_BY_CALLING_CODE[code] ?? [];
  return allowed.find((operator) => serving.includes(operator)) ?? null;
}

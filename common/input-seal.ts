/**
 * A confirm's secret input (the payer's full phone number, the one-time code) rides
 * in its job sealed: AES-256-GCM under a key that Redis never holds (security review
 * M2, its second fix). The key is the service's own, kept in MongoDB
 * (`service_keys`) and made by the first process that needs it. Reading a payer's
 * number then takes Redis and MongoDB together, where the earlier fix (the input in
 * a MongoDB document of its own) needed MongoDB alone, and it costs no store command
 * per confirm: that document was three (docs/performance.md).
 *
 * The request's id is the cipher's additional data: a sealed input opens only in
 * the job it was sealed for. The key rotates without loss (service-keys.ts): the api
 * seals under the current version, a worker opens under the version the text names.
 */
import type { Collection } from 'mongodb';
import type { ServiceKeyDoc } from './documents.js';
import type { KeyringOptions } from './service-keys.js';
import { Seal } from './seal.js';

/** What a confirm must not put in Redis in the clear. */
export interface SecretInput {
  phone_number: string;
  otp: string | null;
}

/** The service key (service-keys.ts) that seals confirms' inputs. */
export const INPUT_KEY_ID = 'confirm_input';

export class InputSeal {
  private readonly sealer: Seal;

  constructor(keys: Collection<ServiceKeyDoc>, options: KeyringOptions = {}) {
    this.sealer = new Seal(keys, INPUT_KEY_ID, options);
  }

  /** Loads the keys. Throws while MongoDB is away and none were loaded. */
  ready(): Promise<void> {
    return this.sealer.ready();
  }

  seal(requestId: string, input: SecretInput): Promise<string> {
    return this.sealer.seal(requestId, JSON.stringify([input.phone_number, input.otp]));
  }

  /** Throws `SealRefused` (seal.ts) on a sealed input that is not this service's, or not this request's. */
  async open(requestId: string, sealed: string): Promise<SecretInput> {
    const [phone_number, otp] = JSON.parse(await this.sealer.open(requestId, sealed)) as [string, string | null];
    return { phone_number, otp };
  }
}

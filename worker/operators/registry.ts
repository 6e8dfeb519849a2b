/**
 * The live operators this service has a connector for, and the connectors of this
 * deployment: one per configured account (common/operator-accounts.ts), each wrapped
 * so that every call's fate feeds `GET /v1/operators` (its health and its account's
 * breaker, common/operator-breaker.ts). A new operator adds its folder and one line
 * to `CONNECTORS`; its configuration group goes in common/config.ts
 * (`OPERATOR_GROUPS`), its callback routes in api/routes/operator-callbacks.ts.
 */
import type { LiveOperatorsConfig } from '../../common/config.js';
import { OperatorUnavailableError } from '../../common/infra-errors.js';
import { breakerFailure, breakerSuccess } from '../../common/operator-breaker.js';
import { accountById, type LiveOperator, type OperatorAccount } from '../../common/operator-accounts.js';
import { recordOperatorCall } from '../../common/operator-status.js';
import type { BuildDeps, ConnectorDeps, OperatorConnector } from './connector.js';
import { mpesaConnector } from './mpesa/connector.js';
import { mtnMomoConnector } from './mtn-momo/connector.js';
import { waveConnector } from './wave/connector.js';

type Build = (account: OperatorAccount, deps: BuildDeps) => OperatorConnector;

/** Operator id → how its connector is built from an account. */
const CONNECTORS: Readonly<Record<LiveOperator, Build>> = {
  mtn_momo: (account, deps) => mtnMomoConnector(account.config as Extract<OperatorAccount, { operator: 'mtn_momo' }>['config'], deps),
  mpesa: (account, deps) => mpesaConnector(account.config as Extract<OperatorAccount, { operator: 'mpesa' }>['config'], deps),
  wave: (account, deps) => waveConnector(account.config as Extract<OperatorAccount, { operator: 'wave' }>['config'], deps),
};

/** The live connectors of a deployment, by account. */
export class OperatorConnectors {
  private readonly byAccount = new Map<string, OperatorConnector>();

  constructor(readonly accounts: readonly OperatorAccount[], build: (account: OperatorAccount) => OperatorConnector) {
    for (const account of accounts) this.byAccount.set(account.id, build(account));
  }

  /** The operators with an account. */
  operators(): Set<string> {
    return new Set(this.accounts.map((a) => a.operator));
  }

  /** The connector of an attempt's (or refund's) account; an attempt from before accounts had ids takes its operator's first. */
  get(operator: string, accountId?: string | null): OperatorConnector | undefined {
    const account = accountById(this.accounts, accountId, operator);
    return account ? this.byAccount.get(account.id) : undefined;
  }

  byId(accountId: string): OperatorConnector | undefined {
    return this.byAccount.get(accountId);
  }
}

export const NO_CONNECTORS = new OperatorConnectors([], () => {
  throw new Error('no accounts');
});

/** The live connectors of this deployment: one per configured account. */
export function liveConnectors(config: { liveOperators: LiveOperatorsConfig }, deps: ConnectorDeps): OperatorConnectors {
  const { accounts, timeoutMs, breakerFailures } = config.liveOperators;
  const shared: BuildDeps = { ...deps, now: deps.now ?? Date.now, timeoutMs };
  return new OperatorConnectors(accounts, (account) => recording(account, CONNECTORS[account.operator](account, shared), shared, breakerFailures));
}

/**
 * Counts each call's fate: answered (whatever the operator said, a 429 included),
 * or no answer (`OperatorUnavailableError` other than throttling): for the
 * operator's `degraded` and the account's breaker. Best effort: a Redis fault is
 * swallowed.
 */
function recording(account: OperatorAccount, connector: OperatorConnector, deps: BuildDeps, threshold: number): OperatorConnector {
  const counted = <A extends unknown[], R>(call: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    try {
      const result = await call(...args);
      void recordOperatorCall(deps.redis, deps.prefix, account.operator, true, deps.now());
      void breakerSuccess(deps.redis, deps.prefix, account.id);
      return result;
    } catch (err) {
      const noAnswer = err instanceof OperatorUnavailableError && err.reason !== 'throttled' && err.reason !== 'in_flight';
      void recordOperatorCall(deps.redis, deps.prefix, account.operator, !noAnswer, deps.now());
      if (noAnswer) void breakerFailure(deps.redis, deps.prefix, account.id, threshold, deps.now());
      else if (!(err instanceof OperatorUnavailableError)) void breakerSuccess(deps.redis, deps.prefix, account.id);
      throw err;
    }
  };
  return {
    requestPayment: counted((request) => connector.requestPayment(request)),
    outcome: counted((attemptId, reference) => connector.outcome(attemptId, reference)),
    refund: counted((request) => connector.refund(request)),
    refundOutcome: counted((request, reference) => connector.refundOutcome(request, reference)),
    withdraw: counted((attemptId, reference) => connector.withdraw(attemptId, reference)),
    payout: counted((request) => connector.payout(request)),
    payoutOutcome: counted((request, reference) => connector.payoutOutcome(request, reference)),
    probe: counted(() => connector.probe()),
  };
}

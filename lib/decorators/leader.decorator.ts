import type { LeaderOptions } from '../interfaces/index.js';
import { assertLeaderRole, resolveLeaderOptions, type ResolvedLeaderOptions } from '../leader/leader-role.util.js';
import { methodDeclarations } from './method-declarations.util.js';

/** A `@Leader` declaration. @internal */
export interface LeaderDeclaration {
  readonly role: string;
  readonly options: ResolvedLeaderOptions;
}

/** Each `@Leader` declaration, by the prototype and key it decorated. */
const declarations = methodDeclarations<LeaderDeclaration>();

/**
 * Makes a provider's method the work of the leader of `role`: every replica of the application stands as a candidate
 * when it starts; the one elected calls the method with `(signal, term)` and leads for as long as the call runs. The
 * `signal` fires when the leadership may be lost (the role's grant could not be renewed in time, or was ended), on
 * `LeaderService.resign(role)` and when the application closes: stop then. When the method returns or throws, the
 * replica gives up the role (the next candidate is elected) and stands again after `rejoinDelayMs` (longer after
 * failures in a row: see `LeaderOptions.rejoinDelayMs`).
 *
 * ```ts
 * @Injectable()
 * export class BillingConsumer {
 *   @Leader('billing-consumer')
 *   async consume(signal: AbortSignal, term: LeaderTerm): Promise<void> {
 *     while (!signal.aborted) await this.queue.pollOnce({ fencingToken: term.token, signal });
 *   }
 * }
 * ```
 * @param role the role's name (see `LeaderService.campaign`)
 * @throws InvalidLockArgumentError when the class is defined, for an invalid role or option.
 * @publicApi
 */
export function Leader(role: string, options?: LeaderOptions): MethodDecorator {
  assertLeaderRole(role);
  const declaration: LeaderDeclaration = { role, options: resolveLeaderOptions(options) };
  return (prototype, key) => declarations.record(prototype, key, declaration);
}

/** The `@Leader` declaration of `prototype[key]` (or of the first prototype of its chain that defines `key`). @internal */
export function leaderOf(prototype: object, key: string | symbol): LeaderDeclaration | undefined {
  return declarations.of(prototype, key);
}

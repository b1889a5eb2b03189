import type { WithLocksDeclaration } from '../utils/resolve-with-locks-options.util.js';
import { methodDeclarations } from './method-declarations.util.js';

/** Each `@WithLocks` declaration, by the prototype and key it decorated, recorded when the class is defined. */
const declarations = methodDeclarations<WithLocksDeclaration>();

/** Records that `@WithLocks` decorated `prototype[key]`. @internal */
export function recordWithLocks(prototype: object, key: string | symbol, lock: WithLocksDeclaration): void {
  declarations.record(prototype, key, lock);
}

/**
 * The `@WithLocks` declaration of the method `key` an object of class prototype `prototype` runs: found on the first
 * prototype of the chain that defines `key` (an inherited method is its base class's; an override without
 * `@WithLocks` has none), whatever other decorators replaced the method there or hid its metadata.
 * @internal
 */
export function withLocksOf(prototype: object, key: string | symbol): WithLocksDeclaration | undefined {
  return declarations.of(prototype, key);
}

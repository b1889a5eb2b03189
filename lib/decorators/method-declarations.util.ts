/**
 * What a method decorator declared, by the class prototype and the method's key, recorded when the class is defined:
 * `record` stores it, `of` finds it on the first prototype of the chain that defines the key (an inherited method is
 * its base class's; an override without the decorator has none), whatever other decorators replaced the method there
 * or hid its metadata.
 * @internal
 */
export interface MethodDeclarations<T> {
  record(prototype: object, key: string | symbol, declaration: T): void;
  of(prototype: object, key: string | symbol): T | undefined;
}

/** A registry of one decorator's declarations. @internal */
export function methodDeclarations<T>(): MethodDeclarations<T> {
  const declarations = new WeakMap<object, Map<string | symbol, T>>();
  return {
    record(prototype, key, declaration) {
      let keys = declarations.get(prototype);
      if (keys === undefined) declarations.set(prototype, (keys = new Map()));
      keys.set(key, declaration);
    },
    of(prototype, key) {
      for (let current: object | null = prototype; current !== null; current = Object.getPrototypeOf(current) as object | null) {
        if (Object.prototype.hasOwnProperty.call(current, key)) return declarations.get(current)?.get(key);
      }
      return undefined;
    },
  };
}

/**
 * Why a `@WithLocks` method cannot be known to return a Promise or an Observable, or undefined when it can (or when
 * nothing can be known). Checked without calling the method:
 * - an `async` method (its function is an `AsyncFunction`) is accepted;
 * - otherwise, when TypeScript recorded the declared return type (`design:returntype`, emitted with
 *   `emitDecoratorMetadata`, Nest's default), the method is accepted if that type is `Promise` (or a subclass), a class
 *   with `subscribe` and `pipe` (an `Observable`), or `Object` (a union, an interface, `any`: not checkable), and
 *   refused otherwise, including a method with no declared return type (recorded as `undefined`, like `void`);
 * - without that metadata (plain JavaScript, a compiler that does not emit it), nothing is checked.
 * @internal
 */
export function returnTypeProblem(prototype: object, name: string | symbol, method: unknown): string | undefined {
  if (typeof method !== 'function') return undefined;
  if (method.constructor?.name === 'AsyncFunction') return undefined;
  if (!Reflect.hasMetadata('design:returntype', prototype, name)) return undefined;
  const type: unknown = Reflect.getMetadata('design:returntype', prototype, name);
  if (type === Object || isPromiseClass(type) || isObservableClass(type)) return undefined;
  const declared = typeof type === 'function' ? type.name : 'void or no return type';
  return (
    `it is not async and its declared return type is ${declared}: the locks are released when the method's ` +
    'Promise settles or its Observable ends, so make it async or declare Promise<…> or Observable<…>'
  );
}

function isPromiseClass(type: unknown): boolean {
  return type === Promise || (typeof type === 'function' && type.prototype instanceof Promise);
}

function isObservableClass(type: unknown): boolean {
  const prototype = typeof type === 'function' ? (type.prototype as Record<string, unknown> | undefined) : undefined;
  return typeof prototype?.subscribe === 'function' && typeof prototype.pipe === 'function';
}

/**
 * Whether TypeScript recorded `Observable` (a class with `subscribe` and `pipe`) as the declared return type of the
 * method (`design:returntype`): then `@WithLocks` returns an Observable at once, as declared.
 * @internal
 */
export function declaresObservable(prototype: object, name: string | symbol): boolean {
  return isObservableClass(Reflect.getMetadata('design:returntype', prototype, name));
}

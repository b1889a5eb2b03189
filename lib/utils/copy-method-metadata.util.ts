/**
 * Copies every reflect-metadata entry of `from` onto `to`, so that route, Swagger or `@Cron` metadata written on a
 * method before `@WithLocks` replaced it stays visible on the replacement (decorators applied after it write onto
 * the replacement directly). The nestjs-cls `@UseCls` approach.
 * @internal
 */
export function copyMethodMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}

/** `@opentelemetry/api`, the module the library records through. @internal */
export type OtelApi = typeof import('@opentelemetry/api');

/** The module specifier, apart so that the compiler and bundlers do not require the optional package. */
const OTEL_API = '@opentelemetry/api';

/** What Node.js (and Jest) say when a package is not installed. */
const NOT_FOUND = new Set(['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND']);

/**
 * Loads `@opentelemetry/api` (an optional peer dependency); undefined when the application does not have it
 * installed. Any other failure to load it is the application's to see.
 * @param specifier the module to load (tests name a missing one)
 * @internal
 */
export async function loadOtelApi(specifier = OTEL_API): Promise<OtelApi | undefined> {
  try {
    return (await import(specifier)) as OtelApi;
  } catch (error) {
    if (NOT_FOUND.has(String((error as { code?: unknown } | null)?.code))) return undefined;
    throw error;
  }
}

import { BadRequestException } from '@nestjs/common';

/** The body of `POST /api/grants/:stamp/release`. */
export interface ForceReleaseInput {
  /** Why the grant is freed, recorded in the lock log (1–500 characters). */
  readonly reason: string;
}

/**
 * Checks a force-release body: a reason is required (the library checks its length again).
 * @throws BadRequestException
 */
export function parseForceReleaseInput(body: unknown): ForceReleaseInput {
  if (typeof body !== 'object' || body === null) throw new BadRequestException('a JSON object is expected');
  const { reason } = body as Record<string, unknown>;
  if (typeof reason !== 'string' || reason.trim().length === 0) {
    throw new BadRequestException('reason is required: say why the grant is freed');
  }
  return { reason: reason.trim() };
}

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

/**
 * Checks the stamp of `POST /api/grants/:stamp/release` (absent when the path is `/api/grants//release`): a positive
 * integer, as `GET /api/grants` lists them.
 * @throws BadRequestException
 */
export function parseForceReleaseStamp(stamp: string | undefined): number {
  if (stamp === undefined || stamp.trim() === '') {
    throw new BadRequestException('stamp is required: POST /api/grants/<stamp>/release, with a stamp from GET /api/grants');
  }
  if (!/^[1-9][0-9]*$/.test(stamp) || !Number.isSafeInteger(Number(stamp))) {
    throw new BadRequestException(`stamp must be a positive integer (a stamp from GET /api/grants), not "${stamp}"`);
  }
  return Number(stamp);
}

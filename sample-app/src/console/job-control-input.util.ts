import { BadRequestException } from '@nestjs/common';
import type { LockJobControl } from 'nestjs-db-locks';

/**
 * Checks the body of `POST /api/jobs/:job/pause|resume|run`: an actor and a reason are required (the library checks
 * their lengths again).
 * @throws BadRequestException
 */
export function parseJobControlInput(body: unknown): LockJobControl {
  if (typeof body !== 'object' || body === null) throw new BadRequestException('a JSON object is expected');
  const { actor, reason } = body as Record<string, unknown>;
  if (typeof actor !== 'string' || actor.trim().length === 0) throw new BadRequestException('actor is required: say who acts');
  if (typeof reason !== 'string' || reason.trim().length === 0) throw new BadRequestException('reason is required: say why');
  return { actor: actor.trim(), reason: reason.trim() };
}

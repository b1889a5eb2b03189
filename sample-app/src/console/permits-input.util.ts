import { BadRequestException } from '@nestjs/common';
import type { LockMode } from 'nestjs-db-locks';

/** The body of `POST /api/permits`. */
export interface PermitsInput {
  /** The lock name, e.g. `WS1` or `loan:2`. */
  readonly name: string;
  readonly mode: LockMode;
  /** The new permits (an integer ≥ 1), or `null` to delete the row so that the default applies again. */
  readonly permits: number | null;
}

/**
 * Checks the shape of a permits body; the library validates the name and the value itself (and the console
 * controller turns its errors into HTTP 400).
 * @throws BadRequestException
 */
export function parsePermitsInput(body: unknown): PermitsInput {
  if (typeof body !== 'object' || body === null) throw new BadRequestException('a JSON object is expected');
  const { name, mode, permits } = body as Record<string, unknown>;
  if (typeof name !== 'string') throw new BadRequestException('name must be a string');
  if (mode !== 'read' && mode !== 'write') throw new BadRequestException('mode must be "read" or "write"');
  if (permits !== null && typeof permits !== 'number')
    throw new BadRequestException('permits must be a number or null');
  return { name, mode, permits };
}

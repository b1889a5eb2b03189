import { BadRequestException } from '@nestjs/common';

/** The body of `POST /loans/:id/repayments`. */
export interface RepaymentInput {
  /** How much the borrower repays, in cents. */
  readonly amountCents: number;
}

/** The body of `POST /loans/:id/transfers`. */
export interface TransferInput {
  /** The debt being sold. */
  readonly debtId: number;
  /** The investor who buys it. */
  readonly to: string;
  /** What the buyer pays the seller, in cents. */
  readonly priceCents: number;
}

const MAX_CENTS = 1_000_000_000;

function record(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BadRequestException('a JSON object is expected');
  return body as Record<string, unknown>;
}

function positiveInt(body: Record<string, unknown>, key: string, max: number): number {
  const value = body[key];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new BadRequestException(`${key} must be an integer from 1 to ${max}`);
  }
  return value;
}

/** Validates a repayment body. @throws BadRequestException */
export function parseRepayment(body: unknown): RepaymentInput {
  return { amountCents: positiveInt(record(body), 'amountCents', MAX_CENTS) };
}

/** Validates a transfer body. @throws BadRequestException */
export function parseTransfer(body: unknown): TransferInput {
  const input = record(body);
  const to = input.to;
  if (typeof to !== 'string' || !/^[a-z][a-z0-9_-]{0,39}$/.test(to)) {
    throw new BadRequestException('to must be an investor name (lower-case letters, digits, _ and -)');
  }
  return {
    debtId: positiveInt(input, 'debtId', 2 ** 31 - 1),
    to,
    priceCents: positiveInt(input, 'priceCents', MAX_CENTS),
  };
}

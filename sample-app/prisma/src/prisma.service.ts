import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/client.js';

/** The injection token of the sample's database URL (`postgres://`). */
export const DATABASE_URL = Symbol('DATABASE_URL');

/** The application's PrismaClient, on PostgreSQL through `@prisma/adapter-pg`: a pool of its own, not the library's. */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleDestroy {
  constructor(@Inject(DATABASE_URL) url: string) {
    super({ adapter: new PrismaPg({ connectionString: url }) });
  }

  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
  }
}

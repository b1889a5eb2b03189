import { defineConfig } from 'prisma/config';

// Read by Prisma's command line (Prisma 7): the database URL of `prisma migrate` and `prisma db`, which schema.prisma
// no longer holds (`prisma generate` does not connect). Without a `schema` here, it uses prisma/schema.prisma.
export default defineConfig({
  datasource: { url: process.env.DATABASE_URL },
});

// Starts LockModule.forRoot({ url: 'mysql://…' }) from dist/ and prints how start-up failed (run with mysql2 hidden).
import 'reflect-metadata';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
// Loaded by its address at run time: the build (dist/), which the typecheck of a fresh clone runs before.
const { LockModule } = await import(new URL('../../dist/index.js', import.meta.url).href);

try {
  const url = 'mysql://nobody:secret@127.0.0.1:1/nothing';
  const imports = [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'no-driver', url, startupTimeoutMs: 200 })];
  const moduleRef = await Test.createTestingModule({ imports }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  console.log('started');
} catch (error) {
  const failure = /** @type {Error} */ (error);
  console.log(`${failure.constructor.name}: ${failure.message}`);
}

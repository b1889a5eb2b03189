import { Module } from '@nestjs/common';
import { ConsoleApiController } from './console-api.controller.js';
import { ConsoleStateService } from './console-state.service.js';
import { ConsoleController } from './console.controller.js';

/** The lock console: the page at `/` and its JSON API under `/api`. */
@Module({
  controllers: [ConsoleController, ConsoleApiController],
  providers: [ConsoleStateService],
})
export class ConsoleModule {}

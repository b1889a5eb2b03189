import { Controller, Get, Header } from '@nestjs/common';
import { ConsoleStateService } from './console-state.service.js';
import { renderConsolePage } from './console.page.js';

/** Serves the lock console page at `/`. */
@Controller()
export class ConsoleController {
  constructor(private readonly console: ConsoleStateService) {}

  /** The page, with the current state in it. */
  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  async page(): Promise<string> {
    return renderConsolePage(await this.console.state());
  }
}

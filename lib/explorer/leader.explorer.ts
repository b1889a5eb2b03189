import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { leaderOf } from '../decorators/leader.decorator.js';
import type { LeaderTerm } from '../interfaces/index.js';
import { LeaderService } from '../leader/leader.service.js';

/**
 * Finds every `@Leader` method of the application at start-up and stands for its role (`LeaderService.stand`); the
 * candidacies start at bootstrap. Two methods of one role in one application are refused (`LockConfigurationError`).
 * @internal
 */
@Injectable()
export class LeaderExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly leaders: LeaderService,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (!wrapper.isDependencyTreeStatic() || typeof instance !== 'object' || instance === null) continue;
      const prototype = Object.getPrototypeOf(instance) as object | null;
      if (!prototype) continue;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const declaration = leaderOf(prototype, name);
        if (!declaration) continue;
        const method = (instance as Record<string, (signal: AbortSignal, term: LeaderTerm) => unknown>)[name]!;
        const work = (signal: AbortSignal, term: LeaderTerm) => method.call(instance, signal, term);
        this.leaders.stand(declaration.role, work, declaration.options, `${instance.constructor.name}.${name}`);
      }
    }
  }
}

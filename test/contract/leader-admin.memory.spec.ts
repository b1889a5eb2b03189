import { describeLeaderAdminContract } from './leader-admin.contract.js';
import { MEMORY_ENGINE_TARGET } from './memory-engine.store.js';

describeLeaderAdminContract(MEMORY_ENGINE_TARGET);

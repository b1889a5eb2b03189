import { describeLockEngineContract } from './lock-engine.contract.js';
import { MEMORY_ENGINE_TARGET } from './memory-engine.store.js';

describeLockEngineContract(MEMORY_ENGINE_TARGET);

import { describeLeaderElectionContract } from './leader-election.contract.js';
import { MEMORY_ENGINE_TARGET } from './memory-engine.store.js';

describeLeaderElectionContract(MEMORY_ENGINE_TARGET);

import { describeLeaderAdminContract } from './leader-admin.contract.js';
import { SQL_ENGINE_TARGETS } from './sql-engine.targets.js';

describeLeaderAdminContract(SQL_ENGINE_TARGETS[1]!);

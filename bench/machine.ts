import { availableParallelism, cpus, totalmem } from 'node:os';
import type { BenchDatabase } from './bench-database.js';

/** Where the numbers were measured. */
export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly postgres: string;
  readonly database: string;
  /** Durability settings that decide the cost of a commit. */
  readonly durability: string;
}

/** The host's part of `MachineInfo`: CPU, memory, Node.js. */
export function describeHost(): Pick<MachineInfo, 'cpuModel' | 'cores' | 'memoryGiB' | 'node'> {
  return {
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  };
}

export async function describeMachine(database: BenchDatabase): Promise<MachineInfo> {
  const [row] = await database.query<{ server_version: string }>('SHOW server_version');
  const settings = await database.query<{ name: string; setting: string }>(
    `SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method') ORDER BY name`,
  );
  return {
    ...describeHost(),
    postgres: row?.server_version ?? 'unknown',
    database: database.source,
    durability: settings.map((setting) => `${setting.name}=${setting.setting}`).join(', '),
  };
}

import type { Contender } from './contenders/contender.js';
import { measure } from './measure.js';
import type { BenchPlan } from './report.js';
import { combineRounds, type Measurement, ratesOf, type RoundSample, type Sample } from './stats.js';
import type { Workload } from './workloads.js';

/** What runs before every slice, so that no contender inherits another's dead rows or dirty pages. */
export interface SliceHygiene {
  /** Reclaims the dead rows of every contender's tables. */
  vacuum(): Promise<void>;
  /** Flushes dirty pages; resolves false when the server refused (the plan then says so). */
  checkpoint(): Promise<boolean>;
}

/**
 * One workload: before round 0, every contender runs once for the warm-up time only (unmeasured), so that the first
 * measured slice pays no first-ever costs; then `rounds` rounds. Round k runs every contender for one slice (own
 * session: warm-up, then measured window), starting with contender k mod n. Every slice starts after `hygiene`'s
 * vacuum and checkpoint (on PostgreSQL: with one CHECKPOINT per round, the round's first contender ran 10 to 20 %
 * slower than in the other positions). `label` names the workload in the progress lines.
 */
export async function runWorkload(
  hygiene: SliceHygiene,
  workload: Workload,
  plan: BenchPlan,
  contenders: readonly Contender[],
  label: string = workload.id,
): Promise<Measurement[]> {
  const slices: (Sample & Pick<RoundSample, 'round' | 'position'>)[][] = contenders.map(() => []);
  process.stderr.write(`${label} priming ... `);
  for (const contender of contenders) {
    await hygiene.vacuum();
    await measure(contender, workload, { warmupMs: plan.warmupMs, durationMs: 0 });
  }
  process.stderr.write('done\n');
  for (let round = 0; round < plan.rounds; round++) {
    const progress: string[] = [];
    for (let position = 0; position < contenders.length; position++) {
      const index = (round + position) % contenders.length;
      const contender = contenders[index];
      if (!contender) continue;
      await hygiene.vacuum();
      if (!(await hygiene.checkpoint())) plan.checkpoints = false;
      const sample = await measure(contender, workload, {
        warmupMs: plan.warmupMs,
        durationMs: plan.sliceSeconds * 1000,
      });
      slices[index]?.push({ ...sample, round, position });
      progress.push(`${contender.id} ${ratesOf(sample).acquisitionsPerSecond.toFixed(0)}/s`);
    }
    process.stderr.write(`${label} round ${round + 1}/${plan.rounds}: ${progress.join(', ')}\n`);
  }
  return contenders.map((contender, index) =>
    combineRounds({ contenderId: contender.id, contender: contender.name, workload: workload.id }, slices[index] ?? []),
  );
}

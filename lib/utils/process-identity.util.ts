import { readFileSync, readlinkSync } from 'node:fs';

/**
 * This process as its successor on the same machine can check it: the kernel's boot id, the PID namespace, the pid
 * and the process's start time in clock ticks (`/proc`, Linux). Undefined elsewhere (nothing can then be proven).
 * @internal
 */
export function processKey(): string | undefined {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const namespace = readlinkSync('/proc/self/ns/pid');
    return `${boot}/${namespace}/${process.pid}/${startTicks(readFileSync('/proc/self/stat', 'utf8'))}`;
  } catch {
    return undefined;
  }
}

/**
 * Whether the process `key` names is certainly gone: it ran on this machine since its last boot, in this PID
 * namespace, and its pid now names no process (the kernel answers "no such process" to a signal 0), or one started at
 * another time (a reused pid, this one's included). This very process (another application of it with the same app
 * id), a process of another machine or another PID namespace (a container restarted in a new one), a process of
 * another user (`EPERM`), and one whose `/proc` entry cannot be read (`hidepid=2` hides other users' processes) are
 * never proven gone.
 * @internal
 */
export function isProcessGone(key: string | null | undefined): boolean {
  const own = processKey();
  if (!key || !own) return false;
  const [boot, namespace, pid, started] = key.split('/');
  const [ownBoot, ownNamespace] = own.split('/');
  if (boot !== ownBoot || namespace !== ownNamespace || !pid || !/^[1-9]\d*$/.test(pid)) return false;
  try {
    process.kill(Number(pid), 0);
  } catch (error) {
    // EPERM: it lives, as another user.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    return startTicks(readFileSync(`/proc/${pid}/stat`, 'utf8')) !== started;
  } catch {
    // A live pid whose start time cannot be read (hidden by hidepid, or it exited just now): not proven.
    return false;
  }
}

/** Field 22 of `/proc/<pid>/stat` (after the command name, which may hold spaces and parentheses). */
function startTicks(stat: string): string {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
}

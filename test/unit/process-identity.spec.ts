import { spawn } from 'node:child_process';
import { isProcessGone, processKey } from '../../lib/utils/process-identity.util.js';
import { processKeyOf as keyOf } from '../support/dead-process.js';

// Start-up recovery frees a previous life's grants at once only when this says it is gone: a false "gone" frees the
// grants of a live holder (two holders at once), a false "alive" only makes a restart wait for the leases.
describe('isProcessGone', () => {
  it('is false for this very process (another application in it with the same appId)', () => {
    expect(processKey()).toBe(keyOf(process.pid));
    expect(isProcessGone(processKey())).toBe(false);
  });

  it('is false for a live process of this machine, and true once it has exited', async () => {
    const child = spawn('sleep', ['30']);
    const key = keyOf(child.pid!);
    expect(isProcessGone(key)).toBe(false);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(isProcessGone(key)).toBe(true);
  });

  it('is true for a pid now used by a process started at another time', () => {
    const [boot, namespace, , started] = processKey()!.split('/');
    expect(isProcessGone(`${boot}/${namespace}/${process.pid}/${Number(started) - 1}`)).toBe(true);
  });

  it('is false for a process of another machine, boot, or PID namespace, and for no key at all', () => {
    const [boot, namespace] = processKey()!.split('/');
    expect(isProcessGone(`00000000-0000-0000-0000-000000000000/${namespace}/999999/1`)).toBe(false);
    expect(isProcessGone(`${boot}/pid:[1]/999999/1`)).toBe(false);
    expect(isProcessGone(null)).toBe(false);
    expect(isProcessGone(undefined)).toBe(false);
    expect(isProcessGone('garbage')).toBe(false);
  });
});

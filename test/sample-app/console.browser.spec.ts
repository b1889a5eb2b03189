import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { LockLostError, WithLocks } from 'nestjs-db-locks';
import type { Page } from 'playwright-core';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { CHROMIUM_PATH, chromiumAvailable, type HeadlessChromium, launchChromium } from './support/chromium.js';
import { call, type SampleInstance, startSampleInstance } from './support/sample-instance.js';

/** Scheduled jobs of another instance of the fleet, for the console's jobs panel. */
@Injectable()
class ConsoleFleetJobs {
  @Cron('* * * * * *')
  @WithLocks('CONSOLE_REPORT_WRITE')
  async report(): Promise<void> {}

  @Cron('* * * * * *')
  @WithLocks('CONSOLE_FAILING_WRITE')
  async failing(): Promise<void> {
    throw new RangeError('no rates for today');
  }
}

/** Where the screenshot goes (git-ignored). */
const ARTIFACTS = resolve(import.meta.dirname, '../../test-artifacts');
const required = process.env.REQUIRE_BROWSER === '1';

if (!chromiumAvailable) {
  const message =
    `\n${'!'.repeat(100)}\n` +
    `  THE LOCK CONSOLE BROWSER TEST ${required ? 'FAILS' : 'IS SKIPPED'}: no Chromium at ${CHROMIUM_PATH}.\n` +
    `  Install it with: apt-get update && apt-get install -y chromium   (or set CHROMIUM_PATH)\n${'!'.repeat(100)}\n`;
  process.stderr.write(message);
}

(chromiumAvailable ? describe : describe.skip)('lock console in a real browser (headless Chromium)', () => {
  let db: TestDatabase;
  let app: SampleInstance;
  /** Another instance on the same database, whose grants the console frees. */
  let holder: LockApp | undefined;
  let browser: HeadlessChromium;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    app = await startSampleInstance(db.url, {
      appId: 'console-1',
      ws1RebuildMs: 2500,
      repaymentMs: 2500,
      transferMs: 2500,
    });
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
  });
  afterAll(async () => {
    await browser?.close();
    await holder?.close();
    await app?.close();
    await db?.drop();
  });

  it('loads the page with the current state', async () => {
    await page.goto(`${app.baseUrl}/`);
    expect(await page.title()).toBe('Lock console · console-1');
    expect(await page.locator('#app-id').textContent()).toBe('console-1');
    expect(await page.locator('#grants-body').textContent()).toContain('No lock is held right now.');
    expect(await page.locator('#permits-body tr[data-name="WS1"] td').allTextContents()).toEqual([
      'WS1',
      '5',
      '1',
      'default',
      'default',
      '',
    ]);
  });

  it('shows the force-release form only once a grant is chosen, and refuses an incomplete form without a request', async () => {
    // What a person sees at load: the permits form, but not the force-release form (whose flex layout once beat `hidden`).
    const form = page.locator('#release-form');
    expect(await page.locator('#permits-form').isVisible()).toBe(true);
    expect(await form.isVisible()).toBe(false);
    expect(await form.boundingBox()).toBeNull();
    expect(await form.evaluate((element) => element.ownerDocument.defaultView?.getComputedStyle(element).display)).toBe('none');
    expect(await page.getByRole('button', { name: 'Release with this reason' }).isVisible()).toBe(false);

    const releases: string[] = [];
    const onRequest = (request: { url(): string }) => {
      if (request.url().includes('/release')) releases.push(request.url());
    };
    page.on('request', onRequest);
    try {
      // Shown anyway (as the broken stylesheet did) and submitted with no grant chosen: the page says so, sends nothing.
      await form.evaluate((element) => element.removeAttribute('hidden'));
      await page.getByRole('button', { name: 'Release with this reason' }).click();
      const status = page.locator('#release-status.error', { hasText: 'choose a grant first' });
      await status.waitFor({ timeout: 3000 });
      expect(await status.isVisible()).toBe(true);
      await page.getByRole('button', { name: 'Cancel' }).click();
      expect(await form.isVisible()).toBe(false);

      // Opened from a grant's button: visible, with that stamp; an empty reason is refused in the page.
      const holding = await createLockApp(db.url, { appId: 'console-form' });
      try {
        const stamp = await holding.locks.tryLocks(['FORM_WRITE']);
        const button = page.locator(`#grants-body tr[data-stamp="${stamp}"] button[data-release]`);
        await button.waitFor({ timeout: 3000 });
        await button.click();
        expect(await form.isVisible()).toBe(true);
        expect(await page.locator('#release-stamp').textContent()).toBe(String(stamp));
        await page.locator('#release-reason').fill('   ');
        await page.getByRole('button', { name: 'Release with this reason' }).click();
        const refused = page.locator('#release-status.error', { hasText: 'reason is required' });
        await refused.waitFor({ timeout: 3000 });
        expect(await refused.isVisible()).toBe(true);
        expect(await form.isVisible()).toBe(true); // still open for the reason
        await page.getByRole('button', { name: 'Cancel' }).click();
        expect(await form.isVisible()).toBe(false);
        expect((await holding.locks.getGrants()).map((grant) => grant.stamp)).toContain(stamp); // not freed
        await holding.locks.releaseLocks(stamp);
      } finally {
        await holding.close();
      }
      // A request would have been seen by now: the two refusals above came from the page.
      await page.evaluate(() => fetch('/api/state').then((response) => response.text()));
      expect(releases).toEqual([]);
    } finally {
      page.off('request', onRequest);
    }
    await page.locator('#release-status').evaluate((element) => (element.textContent = ''));

    // The endpoint itself answers an empty or bad stamp with a 400 that says what is wrong, not "Cannot POST".
    const empty = await call<{ message: string }>(`${app.baseUrl}/api/grants//release`, { reason: 'r' });
    expect(empty).toMatchObject({ status: 400, body: { message: expect.stringContaining('stamp is required') } });
    const bad = await call<{ message: string }>(`${app.baseUrl}/api/grants/x1/release`, { reason: 'r' });
    expect(bad).toMatchObject({ status: 400, body: { message: expect.stringContaining('stamp must be a positive integer') } });
  });

  it('shows a grant appear while a job runs, live, and the log entry after', async () => {
    await page.getByRole('button', { name: 'Run WS1 rebuild now' }).click();
    const ws1 = page.locator('#grants-body tr[data-lock="WS1:write"]');
    await ws1.waitFor({ timeout: 3000 });
    const cells = await ws1.locator('td').allTextContents();
    expect(cells.slice(0, 3)).toEqual(['WS1', 'write', 'console-1']);
    const stamp = cells[3];
    expect(cells[5]).toMatch(/^\d+\.\d s$/); // lease left, from the database clock

    // Two loans busy as well, so that the screenshot shows writers and readers of several names.
    const repayment = call(`${app.baseUrl}/loans/1/repayments`, { amountCents: 12_345 });
    const debt = (
      await call<Array<{ id: number; debts: Array<{ id: number; investor: string }> }>>(`${app.baseUrl}/loans`)
    ).body[1]?.debts[0];
    const transfer = call(`${app.baseUrl}/loans/2/transfers`, {
      debtId: debt?.id,
      to: debt?.investor === 'emil' ? 'chen' : 'emil',
      priceCents: 500,
    });
    await page.locator('#grants-body tr[data-lock="loan:1:write"]').waitFor({ timeout: 3000 });
    await page.locator('#grants-body tr[data-lock="loan:2:read"]').waitFor({ timeout: 3000 });
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'console.png'), fullPage: true });
    expect((await repayment).status).toBe(201);
    expect((await transfer).status).toBe(201);

    await page.locator('#job-status', { hasText: 'ws1-rebuild: done' }).waitFor({ timeout: 5000 });
    await ws1.waitFor({ state: 'detached', timeout: 3000 });
    const logged = page.locator(`#log-body tr[data-stamp="${stamp}"] td`);
    await logged.nth(3).filter({ hasText: 'RELEASED' }).waitFor({ timeout: 3000 });
    expect(await logged.nth(2).textContent()).toBe('WS1 W');
  });

  it('changes a permits row through the form and the button', async () => {
    await page.locator('#permits-body tr[data-name="WS1"]').click(); // fills the name
    expect(await page.locator('#permits-name').inputValue()).toBe('WS1');
    await page.locator('#permits-mode').selectOption('read');
    await page.locator('#permits-value').fill('2');
    await page.getByRole('button', { name: 'Save permits' }).click();
    await page.locator('#permits-status', { hasText: 'saved: WS1 read = 2' }).waitFor({ timeout: 3000 });
    expect(await db.query('SELECT lock_name, mode, permits FROM locking_permissions')).toEqual([
      { lock_name: 'WS1', mode: 'R', permits: 2 },
    ]);
    const row = page.locator('#permits-body tr[data-name="WS1"] td');
    expect((await row.allTextContents()).slice(0, 5)).toEqual(['WS1', '2', '1', '2', 'default']);

    await page.getByRole('button', { name: 'Use default' }).click();
    await page.locator('#permits-status', { hasText: 'saved: WS1 read = default' }).waitFor({ timeout: 3000 });
    expect(await db.query('SELECT * FROM locking_permissions')).toEqual([]);
    await row.nth(3).filter({ hasText: 'default' }).waitFor({ timeout: 3000 });

    await page.locator('#permits-value').fill('0');
    // Past the form's own check (min="1"): the server must refuse it, and the page must say so.
    await page.locator('#permits-value').evaluate((input, value) => input.setAttribute('min', value), '0');
    await page.getByRole('button', { name: 'Save permits' }).click();
    await page.locator('#permits-status.error', { hasText: 'refused' }).waitFor({ timeout: 3000 });
  });

  it("force-releases another instance's grant with a reason: it leaves the table, the log says FORCED and why", async () => {
    // Renews often, so that it learns of the forced release within a fraction of a second.
    holder = await createLockApp(db.url, { appId: 'console-holder', leaseMs: 60_000, renewIntervalMs: 200 });
    const stamp = await holder.locks.tryLocks(['STUCK_WRITE', 'WS2_READ']);
    const signal = holder.locks.getSignal(stamp);
    const grant = page.locator(`#grants-body tr[data-stamp="${stamp}"]`);
    await grant.first().waitFor({ timeout: 3000 });
    expect(await grant.count()).toBe(2); // one row per lock, one button per grant
    await grant.locator('button[data-release]').click();
    expect(await page.locator('#release-form').isVisible()).toBe(true);
    expect(await page.locator('#release-stamp').textContent()).toBe(String(stamp));
    expect(signal.aborted).toBe(false);

    await page.locator('#release-reason').fill('stuck in the browser test');
    await page.getByRole('button', { name: 'Release with this reason' }).click();
    await page.locator('#release-status.ok', { hasText: `released stamp ${stamp} of console-holder` }).waitFor({ timeout: 3000 });
    await grant.first().waitFor({ state: 'detached', timeout: 3000 });
    expect(await page.locator('#release-form').isVisible()).toBe(false); // closed once done
    const logged = page.locator(`#log-body tr[data-stamp="${stamp}"] td`);
    await logged.nth(3).filter({ hasText: 'FORCED' }).waitFor({ timeout: 3000 });
    expect(await logged.nth(7).textContent()).toMatch(/: stuck in the browser test$/);
    await until(() => signal.aborted, 5000);
    expect(signal.reason).toBeInstanceOf(LockLostError);

    // The endpoint itself: 404 for a grant no longer live, 400 without a reason.
    const again = await call<{ message: string }>(`${app.baseUrl}/api/grants/${stamp}/release`, { reason: 'again' });
    expect(again.status).toBe(404);
    expect((await call(`${app.baseUrl}/api/grants/${stamp}/release`, {})).status).toBe(400);
  });

  it('lists a waiter while tryLocks waits, and drops it once it holds the locks', async () => {
    const stamp = await holder!.locks.tryLocks(['QUEUE_WRITE']);
    const waiting = app.locks.tryLocks(['QUEUE_WRITE'], { waitMs: 30_000 });
    const waiter = page.locator('#waiters-body tr[data-app="console-1"]');
    await waiter.waitFor({ timeout: 5000 });
    const cells = await waiter.locator('td').allTextContents();
    expect(cells.slice(1, 3)).toEqual(['console-1', 'QUEUE W']);
    expect(cells[0]).toMatch(/^\d+$/); // its place in the waiting order
    expect(await page.locator('#waiters-count').textContent()).toBe('1');
    await holder!.locks.releaseLocks(stamp);
    const granted = await waiting;
    expect(granted).toBeGreaterThan(0);
    await waiter.waitFor({ state: 'detached', timeout: 3000 });
    await app.locks.releaseLocks(granted);
  });

  it('shows the scheduled jobs of the fleet, their last success and each tick with its outcome and instance', async () => {
    // Another instance of the fleet runs two scheduled jobs (the sample's own schedule is off in the tests).
    const jobs = await createLockApp(db.url, { appId: 'console-jobs' }, 4, [ConsoleFleetJobs]);
    try {
      const report = page.locator('#jobs-body tr[data-job="ConsoleFleetJobs.report"]');
      await report.locator('span[data-outcome="succeeded"]').nth(1).waitFor({ timeout: 8000 });
      const cells = await report.locator('td').allTextContents();
      expect(cells.slice(0, 2)).toEqual(['ConsoleFleetJobs.report', 'cron * * * * * *']);
      expect(cells[3]).toMatch(/^\d+\.\d s ago$/);
      expect(cells[4]).toMatch(/succeeded on console-jobs/);
      const failing = page.locator('#jobs-body tr[data-job="ConsoleFleetJobs.failing"]');
      await failing.locator('span[data-outcome="failed"]').first().waitFor({ timeout: 5000 });
      expect(await failing.locator('td').nth(3).textContent()).toBe('never');
      expect(await failing.locator('span[data-outcome="failed"]').first().textContent()).toMatch(/ failed RangeError on console-jobs$/);
      const api = await call<Array<{ job: string }>>(`${app.baseUrl}/api/jobs`);
      expect(api.body.map((job) => job.job)).toEqual(expect.arrayContaining(['ConsoleFleetJobs.report', 'ConsoleFleetJobs.failing']));
    } finally {
      await jobs.close();
    }
  });

  it('pauses, resumes and runs a job from its row, with an actor and a reason, and refuses an incomplete form', async () => {
    const jobs = await createLockApp(db.url, { appId: 'console-controlled' }, 4, [ConsoleFleetJobs]);
    try {
      const report = page.locator('#jobs-body tr[data-job="ConsoleFleetJobs.report"]');
      await report.locator('span[data-outcome="succeeded"]').first().waitFor({ timeout: 8000 });
      const form = page.locator('#job-control-form');
      expect(await form.isHidden()).toBe(true);
      await report.locator('button[data-control="pause"]').click();
      expect(await form.isVisible()).toBe(true);
      expect(await page.locator('#job-control-job').textContent()).toBe('ConsoleFleetJobs.report');
      // Without a reason nothing is sent.
      await page.fill('#job-control-actor', 'ops-anna');
      await page.click('#job-control-submit');
      expect(await page.locator('#job-control-status').textContent()).toBe('actor and reason are required: say who acts and why');
      await page.fill('#job-control-reason', 'bad data upstream');
      await page.click('#job-control-submit');
      await page.locator('#job-control-status.ok').waitFor({ timeout: 3000 });
      expect(await page.locator('#job-control-status').textContent()).toBe('ConsoleFleetJobs.report: pause by ops-anna: bad data upstream');
      await page.locator('#jobs-body tr[data-job="ConsoleFleetJobs.report"][data-paused="true"]').waitFor({ timeout: 3000 });
      expect(await report.locator('td').nth(5).textContent()).toBe('paused by ops-anna: bad data upstream');
      await report.locator('span[data-outcome="paused"]').first().waitFor({ timeout: 5000 });
      // Run now, while paused: one manual run.
      await report.locator('button[data-control="run"]').click();
      await page.fill('#job-control-reason', 'rerun once');
      await page.click('#job-control-submit');
      await page.locator('#job-control-status.ok').waitFor({ timeout: 3000 });
      await report.locator('span.run', { hasText: '(run now by ops-anna: rerun once)' }).waitFor({ timeout: 8000 });
      await report.locator('button[data-control="resume"]').click();
      await page.fill('#job-control-reason', 'fixed');
      await page.click('#job-control-submit');
      await page.locator('#jobs-body tr[data-job="ConsoleFleetJobs.report"][data-paused="false"]').waitFor({ timeout: 3000 });
    } finally {
      await jobs.close();
    }
  });

  it('shows the leader role of the fleet: its leader, term and candidates in order, and the hand-over when the leader stops', async () => {
    // Two more instances with the sample's leader role on; this page's instance (console-1) does not stand for it.
    const second = await startSampleInstance(db.url, { appId: 'console-2', loanBookReportMs: 200 });
    const third = await startSampleInstance(db.url, { appId: 'console-3', loanBookReportMs: 200 });
    try {
      const role = page.locator('#leaders-body tr[data-role="loan-book-report"]');
      await role.locator('td').nth(6).filter({ hasText: /^1\. console-[23]$/ }).waitFor({ timeout: 8000 });
      const cells = await role.locator('td').allTextContents();
      const leader = cells[1] === 'console-2' ? second : third;
      const candidate = leader === second ? third : second;
      expect(cells[0]).toBe('loan-book-report');
      expect(cells[1]).toBe(leader.config.appId);
      expect(cells[3]).toMatch(/^\d\d:\d\d:\d\d\.\d{3}$/);
      expect(cells[4]).toMatch(/^\d+$/);
      expect(cells[6]).toBe(`1. ${candidate.config.appId}`);
      const term = Number(cells[4]);
      // The API says the same, and the leader publishes its reports in that term.
      const [api] = (await call<Array<{ role: string; leader: { appId: string; term: number } }>>(`${app.baseUrl}/api/leaders`)).body;
      expect(api).toMatchObject({ role: 'loan-book-report', leader: { appId: leader.config.appId, term } });
      await until(async () => {
        const activity = (await call<Array<{ what: string; detail: string }>>(`${leader.baseUrl}/api/activity`)).body;
        return activity.some((entry) => entry.what === 'loan-book-report' && entry.detail.startsWith(`term ${term}: 3 loans`));
      }, 5000);

      // The leader stops (gracefully): the candidate leads at once, in the next term; nobody waits any more.
      await leader.close();
      await role.locator('td').nth(1).filter({ hasText: candidate.config.appId }).waitFor({ timeout: 5000 });
      expect(await role.locator('td').allTextContents()).toEqual([
        'loan-book-report',
        candidate.config.appId,
        expect.any(String),
        expect.stringMatching(/^\d\d:/),
        String(term + 1),
        expect.stringMatching(/ s$/),
        '\u2014',
      ]);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.locator('#leaders').screenshot({ path: join(ARTIFACTS, 'console-leaders.png') });
    } finally {
      await Promise.all([second.close(), third.close()]);
    }
  });

  it('ran without a script error', () => {
    expect(pageErrors).toEqual([]);
  });
});

(required && !chromiumAvailable ? it : it.skip)('has Chromium for the console test (REQUIRE_BROWSER=1)', () => {
  throw new Error(`REQUIRE_BROWSER=1 but there is no Chromium at ${CHROMIUM_PATH}`);
});

#!/usr/bin/env node
// Drives the live recovery page of `eventforge serve` in Debian's Chromium and
// reports what a person would see, as ONE JSON object on stdout.
//
//   node tests/browser/recovery_page.mjs --url http://127.0.0.1:PORT --out DIR \
//        --mode scenarios|overview|readonly [--scenarios a,b,c] [--order ID]
//
// The data-testid names and the JSON the page reads are defined by the page
// contract (see tests/browser/README.md). Exit status: 0 when the page was
// driven fully and raised no console error, page error or failed same-origin
// request; 1 otherwise (the JSON then has "error" and/or "console_errors");
// 2 for a bad command line.
import { chromium } from 'playwright-core';
import { parseArgs } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';

// stdout is reserved for the one JSON object: send any stray log to stderr.
console.log = console.error;
console.info = console.error;

const CHROMIUM = process.env.EF_CHROMIUM || '/usr/bin/chromium';
// No sandbox because tests run as root; the rest keeps Chromium from reaching
// out to the network on its own (there is no network here but the loopback).
const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
// Bounds that keep a broken page from hanging the test, not speed claims:
// the suite runs this beside other tests on a 2-core machine, where Chromium
// alone can take tens of seconds to render a full-page screenshot.
const TIMEOUT_MS = {
  load: 45_000,    // page load and its first fetches
  ui: 30_000,      // a click, a read, a synchronous page reaction
  shot: 60_000,    // a (full-page) screenshot, fonts and layout included
  settle: 120_000, // one scenario run: crash, restart, redelivery in the real system
  poll: 45_000,    // the overview polls every 1 s; two changes must come within this
};
const MODES = { scenarios: driveScenarios, overview: driveOverview, readonly: driveReadonly };

// A failure of the page (as opposed to a bug in this script): reported in "error".
class PageError extends Error {}

// What the driver is doing now, so that a bare Playwright timeout in the JSON
// says which step of which scenario it hit.
let activity = 'starting';
const doing = (what) => { activity = what; log(what); };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
function log(...args) { console.error('recovery_page:', ...args); }

function parseCli() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      out: { type: 'string' },
      mode: { type: 'string' },
      scenarios: { type: 'string' },
      order: { type: 'string' },
    },
    strict: true,
  });
  if (!values.url || !/^https?:\/\//.test(values.url)) throw new Error('--url http://HOST:PORT is required');
  if (!values.out) throw new Error('--out DIR is required');
  if (!MODES[values.mode]) throw new Error(`--mode must be one of ${Object.keys(MODES).join(', ')}`);
  return {
    url: values.url.replace(/\/+$/, '') + '/',
    origin: new URL(values.url).origin,
    out: path.resolve(values.out),
    mode: values.mode,
    scenarios: values.scenarios ? values.scenarios.split(',').map((s) => s.trim()).filter(Boolean) : null,
    order: values.order || null,
  };
}

// ---------------------------------------------------------------------------
// Browser sessions and error collection

// Opens a page in a fresh context at the given viewport. Every console error,
// uncaught page error and failed same-origin request goes into `errors`: the
// page must run clean, so any of them fails the run.
async function openSession(browser, opts, viewport, errors) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const tag = `${viewport.width}x${viewport.height}`;
  let closing = false;  // requests cut off by our own close are not the page's fault
  const sameOrigin = (url) => { try { return new URL(url).origin === opts.origin; } catch { return false; } };
  const record = (what) => { if (!closing) { errors.push(`${tag} ${what}`); log(`${tag} ${what}`); } };

  // The page must work offline (no CDN, no external fonts): refuse and report
  // anything that is not same-origin instead of letting it hang.
  await context.route((url) => url.origin !== opts.origin, (route) => {
    record(`external request blocked: ${route.request().url()}`);
    return route.abort();
  });
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const where = msg.location()?.url ? ` (${msg.location().url}:${msg.location().lineNumber})` : '';
    record(`console: ${msg.text()}${where}`);
  });
  page.on('pageerror', (err) => record(`pageerror: ${err.message}`));
  page.on('crash', () => record('page crashed'));
  page.on('requestfailed', (req) => {
    const failure = req.failure()?.errorText || 'failed';
    // The page may cancel its own superseded polls (AbortController): not a failure.
    if (sameOrigin(req.url()) && failure !== 'net::ERR_ABORTED') {
      record(`request failed: ${req.method()} ${req.url()} ${failure}`);
    }
  });
  page.on('response', (res) => {
    if (sameOrigin(res.url()) && res.status() >= 400) {
      record(`http ${res.status()}: ${res.request().method()} ${res.url()}`);
    }
  });

  return {
    page,
    async close() { closing = true; await context.close(); },
  };
}

async function loadPage(page, opts) {
  await page.goto(opts.url, { waitUntil: 'load', timeout: TIMEOUT_MS.load });
}

// ---------------------------------------------------------------------------
// Reading the page

const byId = (page, id) => page.getByTestId(id);

async function readText(page, id) {
  const text = await byId(page, id).textContent({ timeout: TIMEOUT_MS.ui });
  return (text ?? '').trim();
}

async function readState(page, id) {
  return byId(page, id).getAttribute('data-state', { timeout: TIMEOUT_MS.ui });
}

// Number cells hold only an integer, or "unavailable" when the source is down
// (-> null). Anything else ("1,234", "", "12 events") breaks the contract.
function parseCount(id, text) {
  if (text === 'unavailable') return null;
  if (/^\d+$/.test(text)) return Number(text);
  throw new PageError(`${id}: expected an integer or "unavailable", got ${JSON.stringify(text)}`);
}

async function readCount(page, id) {
  return parseCount(id, await readText(page, id));
}

// The consumer names are not fixed: find them from the ids the page rendered,
// e.g. counter-deliveries-billing -> billing.
async function testIdSuffixes(page, prefix) {
  const ids = await page.locator(`[data-testid^="${prefix}"]`)
    .evaluateAll((els) => els.map((el) => el.getAttribute('data-testid')));
  return [...new Set(ids.map((id) => id.slice(prefix.length)))];
}

// Waits until the text of element `id` has changed `times` times; returns
// every distinct text seen, starting with the first.
async function waitForTextChanges(page, id, times, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  const seen = [await readText(page, id)];
  while (seen.length <= times) {
    if (Date.now() > deadline) {
      throw new PageError(`${id} changed ${seen.length - 1} of ${times} times in ${timeoutMs} ms; seen ${JSON.stringify(seen)}`);
    }
    await sleep(100);
    const now = await readText(page, id);
    if (now !== seen[seen.length - 1]) seen.push(now);
  }
  return seen;
}

async function screenshot(page, opts, name, fullPage) {
  const file = path.join(opts.out, name);
  await page.screenshot({ path: file, fullPage, timeout: TIMEOUT_MS.shot });
  return file;
}

// ---------------------------------------------------------------------------
// Mode: scenarios

async function scenarioNames(page) {
  // scenario-status and scenario-order-id share the prefix: only radios count.
  const radios = page.locator('input[type="radio"][data-testid^="scenario-"]');
  await radios.first().waitFor({ state: 'attached', timeout: TIMEOUT_MS.load });
  return radios.evaluateAll((els) => els.map((el) => el.getAttribute('data-testid').slice('scenario-'.length)));
}

// Runs one scenario and waits for the page to say it settled. The status of
// the previous run is still "settled" right after the click, so the run only
// counts as done once the page shows a new order id as well.
async function runScenario(page, name, previousOrderId) {
  doing(`scenario ${name}: run`);
  await byId(page, `scenario-${name}`).check({ timeout: TIMEOUT_MS.ui });
  await byId(page, 'run').click({ timeout: TIMEOUT_MS.ui });
  const outcome = await page.waitForFunction((previous) => {
    const el = (id) => document.querySelector(`[data-testid="${id}"]`);
    const status = el('scenario-status');
    const state = status?.getAttribute('data-state');
    const orderId = el('scenario-order-id')?.textContent.trim() ?? '';
    if (state === 'error') return { state, text: status.textContent.trim() };
    if (state === 'settled' && orderId !== '' && orderId !== previous) return { state, orderId };
    return false;
  }, previousOrderId, { timeout: TIMEOUT_MS.settle, polling: 100 }).then((handle) => handle.jsonValue());
  doing(`scenario ${name}: read the result`);
  if (outcome.state === 'error') throw new PageError(`scenario-status is error: ${outcome.text}`);
  return outcome.orderId;
}

async function readScenarioView(page) {
  const perConsumer = {};
  for (const c of await testIdSuffixes(page, 'counter-deliveries-')) {
    perConsumer[c] = {
      deliveries: await readCount(page, `counter-deliveries-${c}`),
      changes: await readCount(page, `counter-changes-${c}`),
    };
  }
  return {
    shown: {
      logical_events: await readCount(page, 'counter-logical-events'),
      deliveries: await readCount(page, 'counter-deliveries'),
      business_changes: await readCount(page, 'counter-business-changes'),
      per_consumer: perConsumer,
    },
    panels: {
      order: await readState(page, 'panel-order'),
      outbox: await readState(page, 'panel-outbox'),
      effect: await readState(page, 'panel-effect'),
      offset: await readState(page, 'panel-offset'),
    },
    trace_order_id: await readText(page, 'trace-order-id'),
    steps_lit: await page.locator('[data-testid="steps"] > li[data-lit="true"]')
      .evaluateAll((els) => els.map((el) => el.getAttribute('data-step'))),
    timeline: await page.locator('[data-testid="timeline"] > li')
      .evaluateAll((els) => els.map((el) => el.getAttribute('data-hop'))),
  };
}

// Waits until step-explain shows a new, non-empty text; null if it does not.
async function waitForNewExplain(page, previous, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const now = await readText(page, 'step-explain');
    if (now !== '' && now !== previous) return now;
    await sleep(100);
  }
  return null;
}

// Reset, then Step through the scenario's timeline: every press must reveal a
// new hop, i.e. change the explanation to a new non-empty text. The first
// press may have to run the scenario first, hence the longer wait.
async function walkSteps(page, name, hops, walk) {
  doing(`step walk of ${name}: reset`);
  if (hops === 0) throw new PageError('the timeline is empty');
  await byId(page, `scenario-${name}`).check({ timeout: TIMEOUT_MS.ui });
  await byId(page, 'reset').click({ timeout: TIMEOUT_MS.ui });
  let previous = await readText(page, 'step-explain');
  for (let press = 1; press <= hops; press++) {
    doing(`step walk of ${name}: press ${press} of ${hops}`);
    await byId(page, 'step').click({ timeout: TIMEOUT_MS.settle });
    const text = await waitForNewExplain(page, previous, press === 1 ? TIMEOUT_MS.settle : TIMEOUT_MS.ui);
    if (text === null) {
      throw new PageError(`step-explain did not change to a new non-empty text (still ${JSON.stringify(previous)})`);
    }
    walk.texts.push(text);
    previous = text;
  }
}

async function driveScenarios(browser, opts, result) {
  const session = await openSession(browser, opts, DESKTOP, result.console_errors);
  try {
    const { page } = session;
    doing('load the page');
    await loadPage(page, opts);
    const listed = await scenarioNames(page);
    const names = opts.scenarios ?? listed;
    const unknown = names.filter((n) => !listed.includes(n));
    if (unknown.length) throw new PageError(`scenarios not on the page: ${unknown.join(', ')} (listed: ${listed.join(', ')})`);

    result.scenarios = [];
    let previousOrderId = await readText(page, 'scenario-order-id');
    for (const name of names) {
      const started = Date.now();
      const orderId = await runScenario(page, name, previousOrderId);
      previousOrderId = orderId;
      const view = await readScenarioView(page);
      const shot = await screenshot(page, opts, `scenario-${name}.png`, true);
      result.scenarios.push({ name, order_id: orderId, ...view, screenshot: shot, elapsed_ms: Date.now() - started });
      log(`scenario ${name}: settled in ${Date.now() - started} ms, timeline ${view.timeline.join(' ')}`);
    }

    const last = result.scenarios[result.scenarios.length - 1];
    if (last) {
      result.step_walk = { scenario: last.name, texts: [] };
      await walkSteps(page, last.name, last.timeline.length, result.step_walk);
    }
  } finally {
    await session.close();
  }
}

// ---------------------------------------------------------------------------
// Mode: overview

const OVERVIEW_COUNTS = {
  orders: 'ov-orders',
  logical_events: 'ov-logical-events',
  outbox_unsent: 'ov-outbox-unsent',
  republished: 'ov-republished',
  dlq_parked: 'ov-dlq-parked',
  dlq_replayed: 'ov-dlq-replayed',
  restarts: 'ov-restarts',
  restarting: 'ov-restarting',
};
const CONSUMER_COUNTS = {
  deliveries: 'ov-deliveries-',
  changes: 'ov-changes-',
  duplicates: 'ov-duplicates-',
  rolled_back: 'ov-rolled-back-',
  lag: 'ov-lag-',
};

async function readOverview(page) {
  const overview = {};
  for (const [key, id] of Object.entries(OVERVIEW_COUNTS)) overview[key] = await readCount(page, id);
  // The only non-integer number cell: seconds with one decimal, e.g. "0.0".
  const age = await readText(page, 'ov-outbox-oldest-age');
  if (age !== 'unavailable' && !/^\d+(\.\d+)?$/.test(age)) {
    throw new PageError(`ov-outbox-oldest-age: expected seconds like "0.0" or "unavailable", got ${JSON.stringify(age)}`);
  }
  overview.outbox_oldest_age_s = age === 'unavailable' ? null : Number(age);
  overview.broker = await readText(page, 'ov-broker');
  overview.updated_at = await readText(page, 'ov-updated-at');
  overview.consumers = {};
  for (const c of await testIdSuffixes(page, 'ov-deliveries-')) {
    overview.consumers[c] = {};
    for (const [key, prefix] of Object.entries(CONSUMER_COUNTS)) {
      overview.consumers[c][key] = await readCount(page, prefix + c);
    }
  }
  // Live rates per stage: a number with one decimal, or "–" before a window.
  overview.stage_rates = {};
  for (const s of await testIdSuffixes(page, 'ov-stage-rate-')) {
    overview.stage_rates[s] = await readText(page, `ov-stage-rate-${s}`);
  }
  return overview;
}

// Loads an order through the trace box (Enter, not the button: keyboard use).
async function traceOrder(page, orderId) {
  const input = byId(page, 'trace-input');
  await input.fill(orderId, { timeout: TIMEOUT_MS.ui });
  await input.press('Enter', { timeout: TIMEOUT_MS.ui });
  await page.waitForFunction((id) => {
    const el = document.querySelector('[data-testid="trace-order-id"]');
    return el !== null && el.textContent.trim() === id;
  }, orderId, { timeout: TIMEOUT_MS.ui, polling: 100 });
}

async function driveOverview(browser, opts, result) {
  result.screenshots = {};
  const desktop = await openSession(browser, opts, DESKTOP, result.console_errors);
  try {
    const { page } = desktop;
    doing('overview at 1280x800: wait for two polls');
    await loadPage(page, opts);
    // Two changes of the "updated" time prove the page keeps polling, not
    // just rendering once.
    result.updated_at_seen = await waitForTextChanges(page, 'ov-updated-at', 2, TIMEOUT_MS.poll);
    doing('overview at 1280x800: read the cells');
    result.overview = await readOverview(page);
    result.screenshots.overview = await screenshot(page, opts, 'overview.png', false);
    if (opts.order) {
      doing(`trace order ${opts.order}`);
      await traceOrder(page, opts.order);
      await byId(page, 'trace-order-id').scrollIntoViewIfNeeded({ timeout: TIMEOUT_MS.ui });
      result.trace_order_id = await readText(page, 'trace-order-id');
      result.screenshots.trace = await screenshot(page, opts, 'trace.png', true);
    }
  } finally {
    await desktop.close();
  }

  const phone = await openSession(browser, opts, PHONE, result.console_errors);
  try {
    const { page } = phone;
    doing('overview at 390x844');
    await loadPage(page, opts);
    await waitForTextChanges(page, 'ov-updated-at', 1, TIMEOUT_MS.poll);
    // Single column on a phone: nothing may stick out sideways.
    result.phone = { scroll_width: await page.evaluate(() => document.documentElement.scrollWidth) };
    result.screenshots.phone = await screenshot(page, opts, 'phone.png', true);
  } finally {
    await phone.close();
  }
}

// ---------------------------------------------------------------------------
// Mode: readonly

async function driveReadonly(browser, opts, result) {
  const session = await openSession(browser, opts, DESKTOP, result.console_errors);
  try {
    const { page } = session;
    doing('read-only page: wait for readonly-notice');
    await loadPage(page, opts);
    const notice = byId(page, 'readonly-notice');
    await notice.waitFor({ state: 'visible', timeout: TIMEOUT_MS.load });
    result.readonly_notice = await readText(page, 'readonly-notice');
    // The page learns that it is read-only from a fetch: give it time to
    // disable Run rather than sampling once.
    doing('read-only page: check that run is disabled');
    const run = byId(page, 'run');
    const deadline = Date.now() + TIMEOUT_MS.ui;
    result.run_disabled = await run.isDisabled({ timeout: TIMEOUT_MS.ui });
    while (!result.run_disabled && Date.now() < deadline) {
      await sleep(100);
      result.run_disabled = await run.isDisabled({ timeout: TIMEOUT_MS.ui });
    }
    if (result.readonly_notice === '') throw new PageError('readonly-notice is visible but empty');
    if (!result.run_disabled) throw new PageError('read-only page: run is not disabled');
  } finally {
    await session.close();
  }
}

// ---------------------------------------------------------------------------

function describeError(err) {
  // Strip the terminal colour codes Playwright puts into its messages.
  const lines = String(err.message).replace(/\u001b\[\d+m/g, '').split('\n');
  const waited = lines.map((l) => l.match(/waiting for (.*)/)).find(Boolean);
  const name = err instanceof PageError ? '' : `${err.name}: `;
  return `${name}${lines[0]}${waited ? ` (waiting for ${waited[1]})` : ''}`;
}

function emit(result, code) {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(code));
}

async function main() {
  let opts;
  try {
    opts = parseCli();
  } catch (err) {
    log(err.message);
    return emit({ mode: null, console_errors: [], error: `usage: ${err.message}` }, 2);
  }
  const started = Date.now();
  const result = { mode: opts.mode, console_errors: [] };
  let code = 0;
  let browser = null;
  try {
    fs.mkdirSync(opts.out, { recursive: true });
    doing('launch chromium');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS, timeout: 30_000 });
    await MODES[opts.mode](browser, opts, result);
  } catch (err) {
    // Playwright appends a call log to its messages: keep it on stderr, and
    // put only its first line and the awaited element into the JSON.
    log(err.stack || err.message);
    result.error = `${activity}: ${describeError(err)}`;
    code = 1;
  } finally {
    if (browser) await browser.close().catch((err) => log(`closing chromium: ${err.message}`));
  }
  if (result.console_errors.length > 0) code = 1;
  result.elapsed_ms = Date.now() - started;
  emit(result, code);
}

main();

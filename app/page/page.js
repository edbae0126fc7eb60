// EventForge live recovery page.
//
// Plain ES2020, no dependencies. It reads the same-origin JSON endpoints of
// `eventforge serve` (GET /overview, GET /scenarios, POST /scenarios/{name},
// GET /orders/{id}/trace). Every string that comes from the server is put
// into the page with textContent or text nodes, never parsed as HTML.
'use strict';

const OVERVIEW_INTERVAL_MS = 1000;
// A hung request must not stop the polling (the next poll starts only when
// the previous one ended), so each overview request gets a deadline.
const OVERVIEW_TIMEOUT_MS = 3000;
const TRACE_INTERVAL_MS = 250;
const TRACE_GIVE_UP_MS = 60000;
const SCENARIOS_RETRY_MS = 2000;

// ---------------------------------------------------------------------------
// The seed's explanations, shown by Step next to the hop's own text.

const HOP_EXPLAIN = {
  committed:
    'The API inserted the order, its items and its outbox row in one PostgreSQL transaction and committed it, so the order and its event exist together or not at all. The outbox row stays unsent (sent_at NULL) until a relay marks it sent.',
  crash:
    'An injected crash at a named failure window failed the actor, as any exception would. Its supervisor restarts it; nothing held in memory survives, so recovery has to work from PostgreSQL and Kafka alone.',
  restart:
    'The supervisor restarted the failed actor. It rebuilds what it needs from durable state: a relay from the unsent outbox rows, a partition worker from the committed offset.',
  broker:
    'The scenario changed the Kafka cluster itself, as an outage of a real cluster would: a partition leader moved to another broker, or a broker went down and came back. The line says which broker, and its time says when.',
  client_retry:
    'The client got no usable reply (503 or a lost connection) and sent the same request again with the same Idempotency-Key. The API found the committed order of that key and answered with the same order ID; no second order or outbox row was written.',
  published:
    'A relay read the committed outbox row and produced it to Kafka with the order ID as key. The key picks the partition, so all events of one order share a partition and keep their order. After the broker\'s acknowledgement the relay sets sent_at in a separate transaction: publishing and marking are not atomic.',
  // A copy the consumers read although its outbox row was never marked
  // sent for it (`marked: false` on the published hop).
  published_unmarked:
    'This copy reached the topic and was acknowledged, but its outbox row was not marked sent for it, because the relay stopped between the ack and the mark. The row stayed unsent, so the relay published it again: the topic holds the event more than once.',
  delivered:
    'The worker that owns the record\'s partition received the record and passed it to the consumer\'s handler.',
  effect:
    'One business_effects row: what the consumer\'s rule did for this event. It was committed in the same transaction as the processed_events row, so a redelivery finds that row and cannot add a second effect.',
  parked:
    'The consumer\'s dlq_events entry for this event has status parked. Later events of the same order are parked behind it for this consumer, so they can be applied in order after a replay; other orders in the partition keep flowing.',
  replayed:
    'The parked entry was marked replayed, then its original record (same key, value and event ID) was republished to the source topic. This consumer applies it because its own entry says replayed; a consumer without an entry for the event suppresses it as a duplicate.',
  offset_committed:
    'The consumer group\'s committed offset moved past the record. Only from now on does a restarted worker start after it; before, the record would have been delivered again. The broker keeps no time for offset commits, so this hop is listed last.',
};

const DELIVERY_EXPLAIN = {
  applied:
    'The handler\'s insert into processed_events created the (consumer, event_id) row, so in the same transaction it ran the consumer\'s rule, appended one business_effects row and committed. The offset commit follows separately.',
  suppressed:
    'The handler\'s insert into processed_events hit the (consumer, event_id) primary-key row written by the delivery that applied this event, so the transaction made no business change.',
  rolled_back:
    'This delivery\'s handler transaction never committed: the worker crashed before COMMIT, so PostgreSQL discarded its processed_events row and its business change together. The offset was not committed, so the record is delivered again.',
  parked:
    'The handler failed permanently, or transiently for consumer.max-attempts attempts, so the worker parked the record instead of blocking the partition: it produced the record to the dead-letter topic, stored the dlq_events row after that topic\'s acknowledgement, and then committed the source offset. No business change was made.',
};

// Per crash point: where it sits between the 10 steps (the step it follows),
// what the crash leaves behind, and what the restart has to do about it.
const CRASH_POINTS = {
  'api.after_commit_before_reply': {
    after: 'commit',
    crash:
      'The API worker stopped after the order and outbox transaction committed, before it sent the reply. The client receives 503 and cannot tell whether the order exists.',
    recovery:
      'The restarted API worker has nothing to repair: the order and its outbox row are committed, and a relay publishes the row as usual. The client\'s retry with the same Idempotency-Key gets the same order ID.',
  },
  'relay.after_publish_before_ack': {
    after: 'publish',
    crash:
      'The relay stopped after handing the records of its batch to the Kafka producer, before awaiting any acknowledgement. The records may or may not have reached the topic; no outbox row was marked sent.',
    recovery:
      'The restarted relay publishes again from the first unsent row of its shard. If the first copy did reach the topic, each consumer receives the event twice and suppresses the second copy through processed_events.',
  },
  'relay.after_ack_before_mark': {
    after: 'publish',
    crash:
      'The broker acknowledged the record, then the relay stopped before setting sent_at. The event is on the topic, but its outbox row is still unsent.',
    recovery:
      'The restarted relay finds the row unsent and publishes it again, so the topic holds the event twice. Each consumer applies the first copy and suppresses the second through processed_events.',
  },
  'consumer.before_db_commit': {
    after: 'handler',
    crash:
      'The worker stopped inside the handler transaction, after the processed_events insert and the business change, right before COMMIT. PostgreSQL rolls the transaction back: no processed_events row, no effect.',
    recovery:
      'The group member restarts the worker, which resumes from the committed offset. The record is delivered again and, since the rolled-back processed_events row does not exist, applied once.',
  },
  'consumer.after_db_before_offset': {
    after: 'consumer_commit',
    crash:
      'The handler transaction committed the processed_events row and the business change, then the worker stopped before the offset commit.',
    recovery:
      'The restarted worker resumes from the committed offset, which is still before the record, and receives it again. The processed_events insert conflicts, so that delivery is suppressed and changes nothing.',
  },
  'dlq.after_dlq_ack_before_offset': {
    after: 'handler',
    crash:
      'The dead-letter topic acknowledged the parked copy of the record, then the worker stopped before storing the dlq_events row and before committing the source offset.',
    recovery:
      'The restarted worker resumes from the committed offset, receives the record again and parks it again. The dead-letter topic now holds two copies; dlq_events holds one row, unique per consumer and event ID.',
  },
  'dlq.replay_after_mark_before_publish': {
    after: 'handler',
    crash:
      'An operator replayed the parked event. The replay recorded its intent (the dlq_events row says replaying), then the DLQ handler stopped before publishing the record: nothing is on the topic yet.',
    recovery:
      'The restarted DLQ handler looks for replays left replaying for longer than their delivery timeout, publishes the record again with its event ID and key, and marks the entry replayed. The consumer, whose own entry says replaying, applies it once.',
  },
  'dlq.replay_after_publish_before_mark': {
    after: 'handler',
    crash:
      'The replayed record was acknowledged by the broker, then the DLQ handler stopped before marking the entry replayed. The consumer applies the record: its own entry says replaying.',
    recovery:
      'The restarted DLQ handler finds the entry still replaying and publishes the record once more before marking it replayed. That copy reaches the consumer again and is suppressed through processed_events.',
  },
};

// Which fact of a trace lights each of the 10 steps (see factsFromHops).
const STEP_LIT_BY = {
  request: 'committed',
  transaction: 'committed',
  commit: 'committed',
  relay_read: 'published',
  publish: 'published',
  mark: 'marked',
  worker: 'delivered',
  handler: 'applied',
  consumer_commit: 'applied',
  offset_commit: 'offsetCommitted',
};

// ---------------------------------------------------------------------------
// Page state. `run` is the last scenario run started from this page; `view`
// is the order shown in the trace section (often, not always, run's order).

const state = {
  allowed: false,
  readonlyReason: '',
  scenarios: [],
  staleSince: null,
  knownConsumers: [],
};
let run = null;
let runSeq = 0;
let view = { orderId: null, trace: null };
let viewSeq = 0;

// ---------------------------------------------------------------------------
// Small helpers.

function byTestId(testid) {
  return document.querySelector(`[data-testid="${CSS.escape(testid)}"]`);
}

function byId(id) {
  return document.getElementById(id);
}

// Builds an element. `text` and `class` are special; everything else is an
// attribute. String children become text nodes (never HTML).
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'class') node.className = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  node.append(...children.filter((c) => c !== null && c !== undefined && c !== ''));
  return node;
}

// Writes text only when it changed, so aria-live regions do not repeat
// themselves on every poll.
function setText(node, text) {
  if (node && node.textContent !== text) node.textContent = text;
}

// Number cells hold only the integer or "unavailable": a missing source is
// never shown as 0.
function intText(value) {
  return Number.isInteger(value) ? String(value) : 'unavailable';
}

function plural(n, one, many) {
  return n === 1 ? one : many;
}

function pad(n, width = 2) {
  return String(n).padStart(width, '0');
}

function parseTime(iso) {
  if (!iso) return null;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : d;
}

// Local wall-clock time; `ms` adds milliseconds, which the timeline needs
// because hops of one run are often milliseconds apart.
function clock(date, ms = false) {
  if (!date) return null;
  const base = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return ms ? `${base}.${pad(date.getMilliseconds(), 3)}` : base;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Fetches JSON and never throws for HTTP errors: callers need the status
// (202, 403, 404) and the error body. Network failures do throw.
async function requestJson(url, options = {}) {
  const response = await fetch(url, {
    cache: 'no-store',
    headers: { Accept: 'application/json' },
    ...options,
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    // A non-JSON body (e.g. a proxy's error page): the status says enough.
  }
  return { status: response.status, ok: response.ok, body };
}

function errorText(response) {
  return (response.body && response.body.error) || `HTTP ${response.status}`;
}

// ---------------------------------------------------------------------------
// Overview: polled every second, one request at a time.

async function pollOverview() {
  const started = performance.now();
  try {
    const response = await requestJson('/overview', {
      signal: AbortSignal.timeout(OVERVIEW_TIMEOUT_MS),
    });
    if (!response.ok || !response.body) throw new Error(errorText(response));
    renderOverview(response.body);
    markOverviewFresh(response.body.at);
  } catch (err) {
    markOverviewStale(err);
  } finally {
    const elapsed = performance.now() - started;
    setTimeout(pollOverview, Math.max(0, OVERVIEW_INTERVAL_MS - elapsed));
  }
}

function renderOverview(o) {
  const outbox = o.outbox || {};
  const dlq = o.dlq || {};
  const actors = o.actors || {};
  const restarting = Array.isArray(actors.restarting) ? actors.restarting : null;

  setText(byTestId('ov-orders'), intText(o.orders));
  setText(byTestId('ov-logical-events'), intText(o.logical_events));
  setText(byTestId('ov-outbox-unsent'), intText(outbox.unsent));
  setText(
    byTestId('ov-outbox-oldest-age'),
    Number.isFinite(outbox.oldest_unsent_age_s) ? outbox.oldest_unsent_age_s.toFixed(1) : 'unavailable',
  );
  setText(byTestId('ov-republished'), intText(outbox.republished));
  setText(byTestId('ov-dlq-parked'), intText(dlq.parked));
  setText(byTestId('ov-dlq-replayed'), intText(dlq.replayed));
  setText(byId('ov-dlq-discarded'), intText(dlq.discarded));
  setText(byTestId('ov-restarting'), intText(restarting ? restarting.length : null));
  setText(byId('ov-restarting-names'), restarting && restarting.length ? restarting.join(', ') : '');
  setText(byTestId('ov-restarts'), intText(actors.restarts_recorded));
  setText(byId('ov-crashes'), intText(actors.crashes_recorded));
  renderHealth(byTestId('ov-broker'), o.broker, (b) => (Number.isInteger(b.epoch) ? `ok · epoch ${b.epoch}` : 'ok'));
  // The database object is only sent when something is wrong; without it,
  // a number read from the database tells us it answered.
  const database = o.database || (Number.isInteger(o.orders) ? { ok: true } : null);
  renderHealth(byId('ov-database'), database, () => 'ok');
  renderOverviewConsumers(Array.isArray(o.consumers) ? o.consumers : null);
  renderStages(Array.isArray(o.stages) ? o.stages : []);

  if (typeof o.scenarios_allowed === 'boolean') setAllowed(o.scenarios_allowed, o.readonly_reason);
}

function renderHealth(node, health, okText) {
  const ok = Boolean(health && health.ok);
  node.dataset.state = ok ? 'ok' : 'down';
  const error = health && health.error ? `: ${health.error}` : '';
  setText(node, ok ? okText(health) : `unavailable${error}`);
}

// Rows are kept per consumer name; when the consumer list is missing (its
// source is down) the known rows stay and show "unavailable".
function renderOverviewConsumers(consumers) {
  if (consumers) state.knownConsumers = consumers.map((c) => c.name);
  const byName = new Map((consumers || []).map((c) => [c.name, c]));
  const tbody = byId('ov-consumers');
  syncRows(tbody, state.knownConsumers, overviewConsumerRow);
  for (const name of state.knownConsumers) {
    const c = byName.get(name) || {};
    setText(byTestId(`ov-deliveries-${name}`), intText(c.deliveries));
    setText(byTestId(`ov-changes-${name}`), intText(c.business_changes));
    setText(byTestId(`ov-duplicates-${name}`), intText(c.duplicates_suppressed));
    setText(byTestId(`ov-rolled-back-${name}`), intText(c.rolled_back));
    setText(byTestId(`ov-lag-${name}`), intText(c.lag_total));
  }
  renderLagPartitions(consumers || []);
}

// `data-label` names the cell on phones, where each row is shown as a block
// (CSS), without adding text to the number cell itself.
function overviewConsumerRow(name) {
  const cell = (testid, label) => el('td', { 'data-testid': `${testid}-${name}`, 'data-label': label }, 'unavailable');
  return el(
    'tr',
    { 'data-consumer': name },
    el('th', { scope: 'row' }, name),
    cell('ov-deliveries', 'Deliveries'),
    cell('ov-changes', 'Business changes'),
    cell('ov-duplicates', 'Duplicates suppressed'),
    cell('ov-rolled-back', 'Rolled back'),
    cell('ov-lag', 'Lag'),
  );
}

// Replaces a tbody's rows only when the set of names changed, so cells are
// updated in place on every poll.
function syncRows(tbody, names, makeRow) {
  const current = Array.from(tbody.rows, (row) => row.dataset.consumer);
  if (current.join('\n') === names.join('\n')) return;
  tbody.replaceChildren(...names.map(makeRow));
}

// A rate or a latency with one decimal, or "–" before there is a window or
// an observation (never a made-up 0).
function decimalText(value) {
  return Number.isFinite(value) ? value.toFixed(1) : '–';
}

// A duration in ms as people read it: "5 ms", "0.5 ms", "20 s".
function durationText(ms) {
  if (!Number.isFinite(ms)) return '–';
  if (ms >= 1000) return `${Number((ms / 1000).toPrecision(3))} s`;
  return `${Number(ms.toPrecision(3))} ms`;
}

// A quantile as its histogram knows it: the bucket it falls in ("≤ 20 s",
// or "> 10 s" past the last bound), never the interpolated estimate as if it
// were measured to a tenth of a millisecond.
function bucketText(bucket) {
  if (!bucket) return '–';
  if (bucket.le_ms === null || bucket.le_ms === undefined) return `> ${durationText(bucket.gt_ms)}`;
  return `≤ ${durationText(bucket.le_ms)}`;
}

function bucketTitle(bucket) {
  if (!bucket) return null;
  if (bucket.le_ms === null || bucket.le_ms === undefined) {
    return `above the histogram's last bound, ${durationText(bucket.gt_ms)}`;
  }
  return `in the histogram bucket from ${durationText(bucket.gt_ms)} to ${durationText(bucket.le_ms)}: nothing finer is recorded`;
}

function renderStages(stages) {
  const rows = stages.map((s) =>
    el(
      'tr',
      { 'data-stage': s.stage },
      el('th', { scope: 'row' }, s.stage),
      el('td', { 'data-label': 'What' }, s.what || ''),
      el('td', { 'data-label': 'Per second', 'data-testid': `ov-stage-rate-${s.stage}` }, decimalText(s.per_second)),
      el('td', { 'data-label': 'p50', 'data-testid': `ov-stage-p50-${s.stage}`, title: bucketTitle(s.p50_bucket) }, bucketText(s.p50_bucket)),
      el('td', { 'data-label': 'p99', 'data-testid': `ov-stage-p99-${s.stage}`, title: bucketTitle(s.p99_bucket) }, bucketText(s.p99_bucket)),
    ),
  );
  byId('ov-stages').replaceChildren(...rows);
}

function renderLagPartitions(consumers) {
  const rows = [];
  for (const c of consumers) {
    for (const p of Array.isArray(c.lag) ? c.lag : []) {
      rows.push(
        el(
          'tr',
          {},
          el('th', { scope: 'row' }, c.name),
          el('td', {}, intText(p.partition)),
          el('td', {}, intText(p.log_end)),
          el('td', {}, intText(p.committed)),
          el('td', { class: p.lag > 0 ? 'behind' : null }, intText(p.lag)),
        ),
      );
    }
  }
  byId('ov-lag-partitions').replaceChildren(...rows);
}

function markOverviewFresh(at) {
  const time = parseTime(at) || new Date();
  const node = byTestId('ov-updated-at');
  node.setAttribute('datetime', time.toISOString());
  setText(node, `updated ${clock(time)}`);
  setText(byId('ov-error'), '');
  if (state.staleSince) setText(byId('ov-announce'), 'Overview is live again.');
  state.staleSince = null;
  byId('overview').dataset.stale = 'false';
}

// Keeps the last numbers on screen but dims them and says since when they
// are no longer current, instead of showing them as if they were.
function markOverviewStale(err) {
  if (!state.staleSince) {
    state.staleSince = new Date();
    setText(byId('ov-announce'), 'Overview is stale: the last request failed.');
  }
  const node = byTestId('ov-updated-at');
  node.setAttribute('datetime', state.staleSince.toISOString());
  setText(node, `stale since ${clock(state.staleSince)}`);
  setText(byId('ov-error'), `GET /overview failed: ${err.name === 'TimeoutError' ? 'no answer within 3 s' : err.message}`);
  byId('overview').dataset.stale = 'true';
}

// ---------------------------------------------------------------------------
// Scenarios: the list, read-only mode, and the three buttons.

async function loadScenarios() {
  try {
    const response = await requestJson('/scenarios');
    if (!response.ok || !response.body) throw new Error(errorText(response));
    state.scenarios = Array.isArray(response.body.scenarios) ? response.body.scenarios : [];
    renderScenarioList();
    setAllowed(Boolean(response.body.allowed), response.body.readonly_reason);
  } catch (err) {
    setStatus('error', `Could not load the scenarios (${err.message}); retrying in ${SCENARIOS_RETRY_MS / 1000} s.`);
    setTimeout(loadScenarios, SCENARIOS_RETRY_MS);
  }
}

function renderScenarioList() {
  const items = state.scenarios.map((s, i) => scenarioItem(s, i === 0));
  byId('scenario-items').replaceChildren(...items);
  if (!run) showIdleStatus();
}

function showIdleStatus() {
  setStatus(
    'idle',
    state.allowed
      ? 'No run yet. Choose a scenario, then Run (live) or Step (one hop at a time).'
      : 'No runs from this page while scenario runs are off; orders can still be traced.',
  );
}

// The whole row is the label, so clicking the explanation selects the
// scenario too; the accessible name stays the short title.
function scenarioItem(s, checked) {
  const id = `scenario-${s.name}`;
  const input = el('input', {
    type: 'radio',
    name: 'scenario',
    value: s.name,
    id,
    'data-testid': id,
    'aria-labelledby': `${id}-title`,
    'aria-describedby': `${id}-explain`,
  });
  input.checked = checked;
  const facts = [];
  if (s.point) facts.push(el('code', {}, s.point));
  const expect = expectText(s.expect);
  if (expect) facts.push(el('span', {}, `expect ${expect}`));
  return el(
    'label',
    { class: 'scenario', for: id },
    input,
    el(
      'span',
      { class: 'scenario-body' },
      el('span', { class: 'scenario-title', id: `${id}-title` }, s.title || s.name),
      el('span', { class: 'scenario-explain', id: `${id}-explain` }, s.explain || ''),
      facts.length ? el('span', { class: 'scenario-facts' }, ...joinWith(facts, ' · ')) : null,
    ),
  );
}

function joinWith(nodes, separator) {
  return nodes.flatMap((node, i) => (i === 0 ? [node] : [separator, node]));
}

function expectText(expect) {
  if (!expect) return '';
  const parts = [];
  if (Number.isInteger(expect.logical_events)) {
    parts.push(`${expect.logical_events} ${plural(expect.logical_events, 'logical event', 'logical events')}`);
  }
  if (Number.isInteger(expect.deliveries)) {
    parts.push(`${expect.deliveries} ${plural(expect.deliveries, 'delivery', 'deliveries')}`);
  }
  if (Number.isInteger(expect.business_changes)) {
    parts.push(`${expect.business_changes} ${plural(expect.business_changes, 'business change', 'business changes')}`);
  }
  return parts.join(' · ');
}

function selectedScenario() {
  const input = document.querySelector('input[name="scenario"]:checked');
  return input ? state.scenarios.find((s) => s.name === input.value) || null : null;
}

function setAllowed(allowed, reason) {
  state.allowed = allowed;
  state.readonlyReason = reason || '';
  renderReadonlyNotice();
  updateControls();
  if (!run && byTestId('scenario-status').dataset.state === 'idle') showIdleStatus();
}

// The notice exists in the DOM only in read-only mode.
function renderReadonlyNotice() {
  const slot = byId('readonly-slot');
  if (state.allowed) {
    slot.replaceChildren();
    return;
  }
  const reason = state.readonlyReason || 'the server does not allow scenario runs.';
  let notice = byTestId('readonly-notice');
  if (!notice) {
    notice = el('p', { class: 'notice', 'data-testid': 'readonly-notice', role: 'note' });
    slot.replaceChildren(notice);
  }
  setText(notice, `Read-only: scenario runs are off. ${reason}`);
}

// Read-only mode disables the controls for real. While a run is settling,
// the buttons only get aria-disabled, so a keyboard user's focus stays on
// the button just pressed.
function updateControls() {
  const busy = Boolean(run && run.phase === 'running');
  const hasScenario = state.scenarios.length > 0;
  for (const input of document.querySelectorAll('input[name="scenario"]')) input.disabled = !state.allowed;
  const buttons = { run: hasScenario, step: hasScenario, reset: Boolean(run && run.phase === 'settled') };
  for (const [id, usable] of Object.entries(buttons)) {
    const button = byId(id);
    button.disabled = !state.allowed || !usable;
    if (busy && usable) button.setAttribute('aria-disabled', 'true');
    else button.removeAttribute('aria-disabled');
  }
}

function buttonBlocked(id) {
  const button = byId(id);
  return button.disabled || button.getAttribute('aria-disabled') === 'true';
}

function setStatus(phase, text) {
  const node = byTestId('scenario-status');
  node.dataset.state = phase;
  setText(node, text);
}

function onRun() {
  const scenario = selectedScenario();
  if (buttonBlocked('run') || !scenario) return;
  startRun(scenario, 'run');
}

// Step first loads a settled run of the selected scenario; every further
// press reveals the next hop of its timeline.
function onStep() {
  const scenario = selectedScenario();
  if (buttonBlocked('step') || !scenario) return;
  if (!run || run.scenario.name !== scenario.name || run.phase !== 'settled') {
    startRun(scenario, 'step');
    return;
  }
  // Past the last hop there is nothing to reveal; the card says so already.
  if (run.stepPos === null) run.stepPos = 0;
  if (run.stepPos >= timelineOf(run.trace).length) return;
  run.stepPos += 1;
  showRunOrder();
  renderStepCard();
}

function onReset() {
  if (buttonBlocked('reset')) return;
  run.stepPos = 0;
  showRunOrder();
  renderStepCard();
}

async function startRun(scenario, mode) {
  const token = ++runSeq;
  const title = `“${scenario.title || scenario.name}”`;
  run = {
    scenario,
    phase: 'running',
    orderId: null,
    trace: null,
    // null shows every hop (Run); a number shows that many hops (Step).
    stepPos: mode === 'step' ? 0 : null,
    started: performance.now(),
  };
  setStatus('running', `Starting ${title}…`);
  byId('run-order').hidden = true;
  byId('run-result').hidden = true;
  renderStepCard();
  updateControls();

  let response;
  try {
    response = await requestJson(`/scenarios/${encodeURIComponent(scenario.name)}`, { method: 'POST' });
  } catch (err) {
    failRun(token, `Could not start ${title}: ${err.message}`);
    return;
  }
  if (token !== runSeq) return;
  if (response.status !== 202 || !response.body || !response.body.order_id) {
    failRun(token, `Could not start ${title}: ${errorText(response)}`);
    return;
  }

  run.orderId = response.body.order_id;
  setText(byId('scenario-order-id'), run.orderId);
  byId('run-order').hidden = false;
  setStatus(
    'running',
    mode === 'step'
      ? `Running ${title}: waiting until it settles, then each Step reveals one hop.`
      : `Running ${title}: following its order live.`,
  );
  showRunOrder();

  try {
    // The order may not exist yet right after the POST: a run waits for it.
    await followTrace(run.orderId, {
      waitForOrder: true,
      isCurrent: () => token === runSeq,
      onTrace: onRunTrace,
    });
  } catch (err) {
    failRun(token, `${title} did not settle: ${err.message}`);
    return;
  }
  if (token !== runSeq) return;
  run.phase = 'settled';
  const seconds = ((performance.now() - run.started) / 1000).toFixed(1);
  const count = timelineOf(run.trace).length;
  setStatus('settled', `Settled after ${seconds} s with ${count} recorded hops. Step reveals them one at a time.`);
  renderRunResult();
  renderStepCard();
  updateControls();
}

function failRun(token, message) {
  if (token !== runSeq) return;
  run.phase = 'error';
  setStatus('error', message);
  updateControls();
}

function onRunTrace(trace) {
  run.trace = trace;
  renderRunResult();
  if (view.orderId === run.orderId) {
    view.trace = trace;
    renderTrace();
    setTraceStatus(trace);
  }
}

// Headline counters of the focus consumer plus the per-consumer table.
function renderRunResult() {
  const counters = (run && run.trace && run.trace.counters) || null;
  byId('run-result').hidden = !counters;
  if (!counters) return;
  const focus = focusConsumer(run.trace);
  const deliveries = counters.deliveries || {};
  const changes = counters.business_changes || {};

  setCounter('counter-logical-events', 'word-events', counters.logical_events, 'logical event', 'logical events');
  setCounter('counter-deliveries', 'word-deliveries', deliveries[focus], 'delivery', 'deliveries');
  setCounter('counter-business-changes', 'word-changes', changes[focus], 'business change', 'business changes');
  setText(byId('focus-name'), focus || 'no consumer');
  renderExpectLine(counters, focus);

  const names = Array.from(new Set([...Object.keys(deliveries), ...Object.keys(changes)]));
  const tbody = byId('run-consumers');
  syncRows(tbody, names, (name) =>
    el(
      'tr',
      { 'data-consumer': name },
      el('th', { scope: 'row' }, name, name === focus ? el('span', { class: 'muted' }, ' (focus)') : null),
      el('td', { 'data-testid': `counter-deliveries-${name}` }),
      el('td', { 'data-testid': `counter-changes-${name}` }),
    ),
  );
  for (const name of names) {
    setText(byTestId(`counter-deliveries-${name}`), intText(deliveries[name]));
    setText(byTestId(`counter-changes-${name}`), intText(changes[name]));
  }
}

function setCounter(testid, wordId, value, one, many) {
  setText(byTestId(testid), intText(value));
  setText(byId(wordId), plural(value, one, many));
}

// Compares the settled result with the scenario's expectation, so a
// difference is stated rather than left for the reader to spot. Deliveries
// other than expected with the expected business changes are what
// at-least-once delivery allows, and are explained as such; only a business
// change or logical event too many or too few "differs".
function renderExpectLine(counters, focus) {
  const expect = run.scenario.expect;
  const wanted = expectText(expect);
  let text = wanted ? `Expected: ${wanted}.` : '';
  if (wanted && run.phase === 'settled') {
    const actual = {
      logical_events: counters.logical_events,
      deliveries: (counters.deliveries || {})[focus],
      business_changes: (counters.business_changes || {})[focus],
    };
    const off = (k) => Number.isInteger(expect[k]) && expect[k] !== actual[k];
    if (off('logical_events') || off('business_changes')) {
      const which = ['logical_events', 'business_changes'].filter(off).map((k) => `${k.replace('_', ' ')}: ${intText(actual[k])}`);
      text += ` The result differs (${which.join(', ')}).`;
    } else if (off('deliveries')) {
      text += ` ${allowedDeliveriesText(expect.deliveries, actual.deliveries)}`;
    } else {
      text += ' The result matches.';
    }
  }
  setText(byId('expect-line'), text);
  renderScenarioNodes();
}

function allowedDeliveriesText(wanted, got) {
  if (!Number.isInteger(got)) return 'The deliveries are not known yet.';
  if (got > wanted) {
    const extra = got - wanted;
    return `Allowed by at-least-once: ${got} deliveries instead of ${wanted}. The record came ${extra} more ${plural(extra, 'time', 'times')}, and each extra copy found its processed_events mark and changed nothing, so the business change was still made once. Kafka delivers a record again whenever its offset commit does not land, for example a commit refused with "Unknown member" while the consumer group rebalances during a broker outage.`;
  }
  return `Allowed by at-least-once: ${got} ${plural(got, 'delivery', 'deliveries')} instead of ${wanted}. The window this scenario aims at did not make its extra copy this time (for example the first publish never reached the broker before the crash); the business change was made once, as required.`;
}

// Where the run's crash was armed and which node fired it: a scenario posted
// to one node fires on the node that owns the order's relay shard or
// partition.
function renderScenarioNodes() {
  const arm = run && run.trace && run.trace.scenario;
  const line = byId('scenario-nodes');
  if (!line) return;
  line.hidden = !arm;
  if (!arm) return;
  const armedOn = Array.isArray(arm.armed_on) ? arm.armed_on.join(', ') : arm.armed_by;
  let text = `Posted to node ${arm.armed_by}; armed on ${armedOn}.`;
  if (arm.point) {
    text += arm.fired_by
      ? ` The crash at ${arm.point} fired on node ${arm.fired_by}${arm.fired_by === arm.armed_by ? '' : ', which owns the window for this order'}.`
      : ` The crash at ${arm.point} has not fired (yet).`;
  }
  setText(line, text);
}

// The card under the buttons: which hop Step is at, the hop's own text and
// the seed's explanation of that kind of hop.
function renderStepCard() {
  const card = byId('step-card');
  const pos = run ? run.stepPos : null;
  const hops = run ? timelineOf(run.trace) : [];
  if (!run || pos === null || run.phase !== 'settled') {
    card.hidden = true;
    setText(byTestId('step-explain'), '');
    return;
  }
  card.hidden = false;
  if (pos === 0) {
    setText(byId('step-position'), `At the start: 0 of ${hops.length} hops shown.`);
    setText(byTestId('step-explain'), '');
    setText(byId('step-why'), 'Press Step to reveal the first hop.');
    card.dataset.hop = '';
    return;
  }
  const hop = hops[pos - 1];
  const time = clock(parseTime(hop.at), true) || 'no time recorded';
  const last = pos === hops.length ? ' (the last; Reset starts again)' : '';
  setText(byId('step-position'), `Hop ${pos} of ${hops.length}${last} · ${hopLabel(hop)} · ${time}`);
  setText(byTestId('step-explain'), hop.text || '');
  setText(byId('step-why'), explainHop(hop));
  card.dataset.hop = hop.hop;
}

function explainHop(hop) {
  const point = CRASH_POINTS[hop.point];
  if (hop.hop === 'crash' && point) return point.crash;
  if (hop.hop === 'restart' && point) return point.recovery;
  if (hop.hop === 'delivered' && DELIVERY_EXPLAIN[hop.outcome]) return DELIVERY_EXPLAIN[hop.outcome];
  if (hop.hop === 'published' && hop.marked === false) return HOP_EXPLAIN.published_unmarked;
  return HOP_EXPLAIN[hop.hop] || '';
}

// ---------------------------------------------------------------------------
// Trace: loading an order and following it until it settles.

function traceUrl(orderId) {
  return `/orders/${encodeURIComponent(orderId)}/trace`;
}

// Polls one order's trace every 250 ms (never two requests at once) until it
// is settled, `isCurrent` turns false, or 60 s passed. Network errors and
// 5xx answers are retried; 404 only while `waitForOrder` is set.
async function followTrace(orderId, { waitForOrder, isCurrent, onTrace }) {
  const deadline = performance.now() + TRACE_GIVE_UP_MS;
  while (isCurrent()) {
    const started = performance.now();
    let response = null;
    try {
      response = await requestJson(traceUrl(orderId));
    } catch {
      // Retried below like a 5xx: the server may be restarting.
    }
    if (!isCurrent()) return;
    if (response && response.ok && response.body) {
      onTrace(response.body);
      if (response.body.settled) return;
    } else if (response && response.status >= 400 && response.status < 500) {
      if (!(response.status === 404 && waitForOrder)) throw new Error(errorText(response));
    }
    if (performance.now() > deadline) throw new Error(`not settled after ${TRACE_GIVE_UP_MS / 1000} s`);
    await sleep(Math.max(0, TRACE_INTERVAL_MS - (performance.now() - started)));
  }
}

function onTraceSubmit(event) {
  event.preventDefault();
  const orderId = byTestId('trace-input').value.trim();
  if (!orderId) {
    setText(byId('trace-status'), 'Enter an order ID.');
    return;
  }
  showOrder(orderId);
}

function showRunOrder() {
  if (!run || !run.orderId) return;
  if (view.orderId === run.orderId) renderTrace();
  else showOrder(run.orderId);
}

// Switches the trace section to an order. The run's own order is followed by
// the run (see startRun); any other order gets its own follower.
function showOrder(orderId) {
  const token = ++viewSeq;
  const isRunOrder = Boolean(run && run.orderId === orderId);
  view = { orderId, trace: isRunOrder ? run.trace : null };
  byTestId('trace-input').value = orderId;
  setText(byTestId('trace-order-id'), orderId);
  renderTrace();
  if (isRunOrder) {
    if (view.trace) setTraceStatus(view.trace);
    else setText(byId('trace-status'), 'Waiting for the run\'s order to appear…');
    return;
  }
  setText(byId('trace-status'), 'Loading…');
  followTrace(orderId, {
    waitForOrder: false,
    isCurrent: () => token === viewSeq,
    onTrace: (trace) => {
      view.trace = trace;
      renderTrace();
      setTraceStatus(trace);
    },
  }).catch((err) => {
    if (token === viewSeq) setText(byId('trace-status'), `Could not trace ${orderId}: ${err.message}`);
  });
}

function setTraceStatus(trace) {
  setText(
    byId('trace-status'),
    trace.settled
      ? 'Settled: every consumer applied or parked every event and committed its offset past it.'
      : 'Not settled yet: following live.',
  );
}

function timelineOf(trace) {
  return trace && Array.isArray(trace.timeline) ? trace.timeline : [];
}

function focusConsumer(trace) {
  const named = trace && trace.counters && trace.counters.focus_consumer;
  if (named) return named;
  const first = trace && trace.events && trace.events[0] && trace.events[0].consumers && trace.events[0].consumers[0];
  return first ? first.consumer : null;
}

// ---------------------------------------------------------------------------
// What a trace shows as of a point in its timeline. A step or panel lights
// as soon as it happened for at least one event of the order, for the focus
// consumer (the one the failure hit).

function factsFromHops(hops, focus) {
  const mine = (h) => !h.consumer || h.consumer === focus;
  const marked = hops.filter((h) => h.hop === 'published' && h.marked !== false);
  const offsets = hops.filter((h) => h.hop === 'offset_committed' && mine(h));
  return {
    committed: hops.some((h) => h.hop === 'committed'),
    published: hops.some((h) => h.hop === 'published'),
    marked: marked.length > 0,
    delivered: hops.some((h) => h.hop === 'delivered' && mine(h)),
    applied: hops.some((h) => mine(h) && ((h.hop === 'delivered' && h.outcome === 'applied') || h.hop === 'effect')),
    offsetCommitted: offsets.length > 0,
    changes: hops.filter((h) => h.hop === 'effect' && mine(h)).length,
    lastPublished: marked.pop() || null,
    lastOffset: offsets.pop() || null,
  };
}

// The same facts from the rows of the trace, for the full (non-Step) view:
// the rows are authoritative when the timeline misses something.
function factsFromData(trace, focus) {
  const events = Array.isArray(trace.events) ? trace.events : [];
  const entries = events.map((ev) => (ev.consumers || []).find((c) => c.consumer === focus)).filter(Boolean);
  const deliveries = entries.flatMap((c) => c.deliveries || []);
  const effects = entries.flatMap((c) => c.effects || []);
  const counted = trace.counters && trace.counters.business_changes && trace.counters.business_changes[focus];
  return {
    committed: Boolean(trace.order) || events.length > 0,
    published: events.some((ev) => ev.sent_at),
    marked: events.some((ev) => ev.sent_at),
    delivered: deliveries.length > 0,
    applied: deliveries.some((d) => d.outcome === 'applied') || effects.length > 0,
    offsetCommitted: entries.some((c) => c.offset_committed),
    changes: Number.isInteger(counted) ? counted : effects.length,
  };
}

function mergeFacts(fromHops, fromData) {
  const merged = { ...fromHops };
  for (const key of ['committed', 'published', 'marked', 'delivered', 'applied', 'offsetCommitted']) {
    merged[key] = fromHops[key] || fromData[key];
  }
  merged.changes = Math.max(fromHops.changes, fromData.changes);
  return merged;
}

// Step position of the trace on screen: only the run's own order is stepped.
// A Step run shows nothing while it settles, then one more hop per press.
function viewStepPos() {
  return run && run.orderId === view.orderId ? run.stepPos : null;
}

function renderTrace() {
  const trace = view.trace;
  const pos = viewStepPos();
  const all = timelineOf(trace);
  const hops = pos === null ? all : all.slice(0, pos);
  const focus = focusConsumer(trace);
  let facts = factsFromHops(hops, focus);
  if (trace && pos === null) facts = mergeFacts(facts, factsFromData(trace, focus));

  const scope = [];
  if (focus) scope.push(`panels and steps for consumer ${focus}`);
  if (pos !== null) scope.push(`as of hop ${pos} of ${all.length}`);
  setText(byId('trace-scope'), scope.length ? ` · ${scope.join(', ')}` : '');

  renderPanels(facts, focus, trace, pos !== null);
  renderSteps(facts, hops);
  renderTimeline(hops, pos);
  renderDetails(trace);
}

function setPanel(testid, stateValue, stateText, detail, tone) {
  const panel = byTestId(testid);
  panel.dataset.state = stateValue;
  panel.dataset.tone = tone;
  setText(panel.querySelector('.panel-state'), stateText);
  setText(panel.querySelector('.panel-detail'), detail);
}

// `stepping` hides details that come from the final rows, which would be
// ahead of the hop being shown.
function renderPanels(facts, focus, trace, stepping) {
  const order = trace && trace.order;
  if (facts.committed) {
    const status = order && order.status && !stepping ? `status ${order.status}` : 'committed with its outbox row';
    setPanel('panel-order', 'created', 'created', status, 'done');
  } else {
    setPanel('panel-order', 'not-created', 'not created', 'no committed row yet', 'none');
  }

  // "sent" means sent_at is set: a published copy the relay never marked
  // leaves the row written, as it is in the table.
  if (facts.marked) {
    setPanel('panel-outbox', 'sent', 'sent', publishedDetail(facts, trace, stepping), 'done');
  } else if (facts.committed) {
    setPanel('panel-outbox', 'written', 'written', 'row committed, not sent yet', 'partial');
  } else {
    setPanel('panel-outbox', 'not-written', 'not written', 'no outbox row yet', 'none');
  }

  // More than one business change per event would be a double effect: red.
  const n = facts.changes;
  const events = trace && Array.isArray(trace.events) && trace.events.length ? trace.events.length : 1;
  const tone = n === 0 ? 'none' : n > events ? 'bad' : 'done';
  const by = focus ? `by ${focus}` : '';
  setPanel('panel-effect', String(n), `${n} ${plural(n, 'change', 'changes')}`, tone === 'bad' ? `more than one per event ${by}` : by, tone);

  if (facts.offsetCommitted) {
    const offset = offsetDetail(facts, focus, trace, stepping);
    setPanel('panel-offset', 'committed', 'committed', offset, 'done');
  } else {
    setPanel('panel-offset', 'not-committed', 'not committed', focus ? `${focus} has not committed past the record` : '', 'none');
  }
}

function publishedDetail(facts, trace, stepping) {
  const hop = facts.lastPublished;
  if (hop && Number.isInteger(hop.partition)) return `partition ${hop.partition} · offset ${intText(hop.offset)}`;
  const ev = !stepping && trace && (trace.events || []).find((e) => e.sent_at);
  return ev ? `partition ${intText(ev.partition)} · offset ${intText(ev.offset)}` : '';
}

function offsetDetail(facts, focus, trace, stepping) {
  const hop = facts.lastOffset;
  if (hop && Number.isInteger(hop.offset)) return `${focus || 'consumer'} committed offset ${hop.offset}`;
  const entry = !stepping && trace && (trace.events || []).flatMap((e) => e.consumers || []).find((c) => c.consumer === focus);
  return entry && Number.isInteger(entry.committed_offset) ? `${focus} committed offset ${entry.committed_offset}` : '';
}

function renderSteps(facts, hops) {
  const crashes = hops.filter((h) => h.hop === 'crash');
  for (const li of byTestId('steps').children) {
    const lit = Boolean(facts[STEP_LIT_BY[li.dataset.step]]);
    li.dataset.lit = String(lit);
    setText(li.querySelector('.step-flag'), lit ? 'done' : 'not yet');
    // Crash hops appear in red right after the step they interrupted.
    const here = crashes.filter((h) => CRASH_POINTS[h.point] && CRASH_POINTS[h.point].after === li.dataset.step);
    li.querySelector('.step-crashes').replaceChildren(...here.map(crashMarker));
  }
}

function crashMarker(hop) {
  const who = hop.actor ? ` in ${hop.actor}` : '';
  const time = clock(parseTime(hop.at), true);
  return el('p', { class: 'crash-marker' }, `crash at ${hop.point}${who}${time ? ` (${time})` : ''}`);
}

function hopLabel(hop) {
  if (hop.hop === 'broker') return 'Kafka broker';
  return hop.hop === 'delivered' && hop.outcome ? `delivered: ${hop.outcome}` : hop.hop;
}

function renderTimeline(hops, pos) {
  const items = hops.map((hop, i) => timelineItem(hop, pos !== null && i === pos - 1));
  byTestId('timeline').replaceChildren(...items);
  byId('timeline-empty').hidden = items.length > 0;
  setText(byId('timeline-empty'), pos === 0 ? 'No hops revealed yet: Step reveals them one at a time once the run settled.' : 'No hops recorded yet.');
}

function timelineItem(hop, current) {
  const at = parseTime(hop.at);
  let tone = '';
  if (hop.hop === 'crash') tone = 'bad';
  else if (hop.hop === 'parked') tone = 'outcome-parked';
  else if (hop.hop === 'delivered') tone = `outcome-${hop.outcome || 'unknown'}`;
  return el(
    'li',
    { class: `hop ${tone}`, 'data-hop': hop.hop, 'aria-current': current ? 'step' : null },
    el(
      'p',
      { class: 'hop-head' },
      el('span', { class: 'hop-kind' }, hopLabel(hop)),
      ' ',
      el('time', { datetime: at ? at.toISOString() : null }, clock(at, true) || 'no time recorded'),
    ),
    hop.text ? el('p', { class: 'hop-text' }, hop.text) : null,
    hopMeta(hop),
  );
}

const HOP_FIELDS = [
  ['consumer', 'consumer'],
  ['actor', 'actor'],
  ['point', 'point'],
  ['shard', 'shard'],
  ['partition', 'partition'],
  ['offset', 'offset'],
  ['event_id', 'event'],
];

function hopMeta(hop) {
  const parts = HOP_FIELDS.filter(([key]) => hop[key] !== undefined && hop[key] !== null && hop[key] !== '').map(
    ([key, label]) => `${label} ${hop[key]}`,
  );
  return parts.length ? el('p', { class: 'hop-meta mono' }, parts.join(' · ')) : null;
}

// The rows behind the trace: the order, then per event the outbox columns
// and per consumer its deliveries, effects, committed offset and DLQ entry.
function renderDetails(trace) {
  const box = byId('trace-details');
  if (!trace) {
    box.replaceChildren(el('p', { class: 'muted' }, view.orderId ? 'Nothing loaded yet.' : 'Load an order to see its rows.'));
    return;
  }
  const parts = [];
  if (trace.order) parts.push(orderDetails(trace.order));
  for (const ev of Array.isArray(trace.events) ? trace.events : []) parts.push(eventDetails(ev));
  if (!parts.length) parts.push(el('p', { class: 'muted' }, 'No rows for this order yet.'));
  box.replaceChildren(...parts);
}

function keyValues(pairs) {
  const dl = el('dl', { class: 'kv' });
  for (const [key, value] of pairs) {
    if (value === undefined) continue;
    dl.append(el('div', {}, el('dt', {}, key), el('dd', {}, value === null ? '—' : String(value))));
  }
  return dl;
}

function orderDetails(order) {
  return el(
    'div',
    { class: 'detail-block' },
    el('h4', {}, 'Order row'),
    keyValues([
      ['status', order.status],
      ['customer', order.customer_id],
      ['total (cents)', order.total_cents],
      ['created', order.created_at],
      ['updated', order.updated_at],
    ]),
  );
}

function eventDetails(ev) {
  const where = ev.sent_at
    ? `epoch ${intText(ev.epoch)} · partition ${intText(ev.partition)} · offset ${intText(ev.offset)}`
    : 'not sent';
  return el(
    'div',
    { class: 'detail-block' },
    el('h4', {}, `${ev.event_type || 'event'} · seq ${ev.seq === undefined ? '?' : ev.seq}`),
    keyValues([
      ['event ID', ev.event_id],
      ['trace ID', ev.trace_id],
      ['shard', ev.shard],
      ['created', ev.created_at],
      ['sent', ev.sent_at],
      ['topic position', where],
      ['publish attempts', ev.publish_attempts],
      ['republished', ev.republish_count],
      ['last error', ev.last_error],
    ]),
    consumerTable(ev.consumers || []),
  );
}

function consumerTable(consumers) {
  const head = ['Consumer', 'Deliveries', 'Effects', 'Committed offset', 'Past this record', 'DLQ'];
  const cell = (column, content, cls) => el('td', { 'data-label': head[column], class: cls }, content);
  const rows = consumers.map((c) =>
    el(
      'tr',
      {},
      el('th', { scope: 'row' }, c.consumer, c.group ? el('span', { class: 'muted block' }, c.group) : null),
      cell(1, listOrDash((c.deliveries || []).map(deliveryText))),
      cell(2, listOrDash((c.effects || []).map((e) => `${e.kind} (${intText(e.amount_cents)} cents)`))),
      cell(3, intText(c.committed_offset), 'num'),
      cell(4, c.offset_committed ? 'yes' : 'no'),
      cell(5, c.dlq ? dlqText(c.dlq) : '—'),
    ),
  );
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      { class: 'details stack' },
      el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, ...rows),
    ),
  );
}

// A rolled-back delivery has no recorded position (partition and offset null).
function deliveryText(d) {
  const time = clock(parseTime(d.at), true);
  const where = Number.isInteger(d.offset) ? ` at ${intText(d.partition)}/${d.offset}` : '';
  return `${d.outcome}${where}${time ? ` (${time})` : ''}`;
}

function dlqText(d) {
  const resolved = d.resolved_at ? `, resolved ${d.resolved_at}` : '';
  return `#${d.id} ${d.status}: ${d.error_class}, ${d.attempts} attempt(s)${resolved}`;
}

function listOrDash(lines) {
  if (!lines.length) return '—';
  return el('ul', { class: 'plain' }, ...lines.map((line) => el('li', {}, line)));
}

// ---------------------------------------------------------------------------
// Start-up.

function init() {
  byId('run').addEventListener('click', onRun);
  byId('step').addEventListener('click', onStep);
  byId('reset').addEventListener('click', onReset);
  byId('trace-form').addEventListener('submit', onTraceSubmit);
  byId('scenario-order-id').addEventListener('click', () => {
    if (run && run.orderId) showOrder(run.orderId);
  });
  loadScenarios();
  pollOverview();
}

init();

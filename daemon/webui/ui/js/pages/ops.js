// Operations: P(Altruism) and the leftover order now, changing
// P(Altruism) with the admin credential (after a confirmation), and every
// change so far.

import { h, num, time, duration, pct } from '../dom.js';
import { api } from '../api.js';
import { poll } from '../live.js';
import { tradeoffChart } from '../charts.js';

// What each leftover order does, in the words of altruism.LeftoverOrder.
// The queues that may override P(Altruism): every queue without a tree,
// the leaves of one, each by the name apps give it.
const overridable = (queues) => queues.filter((q) => !q.path || q.leaf);
const queueKey = (q) => q.queue || q.name;

const ORDERS = {
  'efficiency-first': 'DEFAULT asks packed within shares; the leftover to ALTRUISTIC asks, least remaining work first',
  'jct-first': 'DEFAULT asks by least remaining work within shares; the leftover packed across apps',
  'srtf': 'DEFAULT asks within shares, then the leftover to ALTRUISTIC asks, both least remaining work first',
};

export function render(main) {
  const current = h('div', { class: 'cards' });
  const history = h('tbody');
  const result = h('div', { id: 'result', role: 'status', 'aria-live': 'polite' });
  const confirmBox = h('div', { class: 'confirm', id: 'confirm', hidden: true });

  const pInput = h('input', { type: 'number', id: 'p', name: 'p', min: 0, max: 1, step: 0.05, required: true, inputmode: 'decimal' });
  const secret = h('input', { type: 'password', id: 'secret', name: 'secret', required: true, autocomplete: 'off',
    placeholder: 'loom.admin.secret' });
  const who = h('input', { type: 'text', id: 'who', name: 'who', autocomplete: 'username', placeholder: 'for the change log' });
  const review = h('button', { class: 'btn', type: 'submit', id: 'review' }, 'Review change…');
  // Which P(Altruism): the cluster's, or one queue's override of it.
  const queueSel = h('select', { id: 'queue', name: 'queue' }, h('option', { value: '' }, 'the cluster (every queue without an override)'));
  let sched = null;
  let whatIf = null;
  const whatIfBox = h('div', { id: 'whatif' }, h('p', { class: 'subtle' }, 'Loading…'));
  // Which view of the what-if: the cluster's P(Altruism), or one queue's
  // override of it (its jobs alone judged).
  const whatIfQueue = h('select', { id: 'whatif-queue', onchange: async () => {
    whatIfBox.replaceChildren(h('p', { class: 'subtle' }, 'Loading…'));
    try { drawWhatIf(await api.whatIf(whatIfQueue.value)); } catch (e) { whatIfBox.replaceChildren(h('p', { class: 'notice' }, e.message)); }
  } }, h('option', { value: '' }, 'the cluster'));

  // expected finds the what-if row for p, or the nearest, and says what
  // the recorded jobs would see there against the current setting.
  function expected(p, queue = '') {
    if (!whatIf || whatIf.state !== 'ready' || !whatIf.rows.length || (whatIf.queue || '') !== queue) return null;
    const near = (q) => whatIf.rows.reduce((a, b) => (Math.abs(b.pAltruism - q) < Math.abs(a.pAltruism - q) ? b : a));
    const to = near(p);
    const from = near(whatIf.currentPAltruism);
    const exact = to.pAltruism === p ? '' : ` (nearest setting replayed: ${num(to.pAltruism)})`;
    return h('p', { id: 'expected' }, h('strong', {}, 'Expected'), exact, `, on the last ${whatIf.jobs} finished jobs: `,
      `average JCT ${duration(to.avgJctMs)} (now ${duration(from.avgJctMs)}), `,
      `Jain's index ${to.jain.toFixed(3)} (now ${from.jain.toFixed(3)}), `,
      `${pct(to.slowed, 1)} of jobs slowed more than 20% against P(Altruism) 0 (now ${pct(from.slowed, 1)}).`);
  }

  // While the RM replays, ask again each second rather than at the
  // page's slower poll.
  let soon = null;
  // measuredLine says what the apps that finished since the last change
  // took, beside those before it.
  function measuredLine(m) {
    if (!m) return null;
    const stat = (x) => (x.apps ? `${x.apps} app${x.apps === 1 ? '' : 's'}, average ${duration(x.avgJctMs)}` : 'no app yet');
    return h('p', { id: 'measured' }, h('strong', {}, 'Measured'),
      `: since P(Altruism) went from ${num(m.fromPAltruism)} to ${num(m.pAltruism)} at ${time(m.sinceMs)}, ${stat(m.after)} finished; `,
      `before it, ${stat(m.before)}. Different apps ran in each period: a guide, not a proof.`);
  }

  function drawWhatIf(w) {
    whatIf = w;
    if (w.state === 'computing' && !soon && main.isConnected !== false) {
      soon = setTimeout(async () => {
        soon = null;
        if (!document.body.contains(whatIfBox)) return;
        try { drawWhatIf(await api.whatIf(whatIfQueue.value)); } catch { /* the page's poll reports errors */ }
      }, 1000);
    }
    const say = (t) => whatIfBox.replaceChildren(...[measuredLine(w.measured)].filter(Boolean),
      h('p', { class: 'subtle', id: 'whatif-state' }, t));
    switch (w.state) {
      case 'unavailable': return say('This ResourceManager was started without the simulator; run loom tune --rm-history instead.');
      case 'no-history': return say(w.queue ? `No DAG job of queue ${w.queue} has finished yet.`
        : 'No DAG job has finished yet: the what-if replays the jobs this ResourceManager recorded.');
      case 'failed': return say(`The what-if failed: ${w.error}`);
      default:
    }
    if (!w.rows.length) return say('Replaying the recorded jobs at each P(Altruism)…');
    const cur = (r) => Math.abs(r.pAltruism - w.currentPAltruism) < 1e-9;
    const pts = (x) => w.rows.map((r) => ({ x: x(r), y: r.avgJctMs / 1000, label: `P=${num(r.pAltruism)}`, current: cur(r) }));
    const rows = w.rows.map((r, i) => h('tr', { class: cur(r) ? 'current' : null },
      h('td', { class: 'num' }, num(r.pAltruism)), h('td', { class: 'num' }, duration(r.avgJctMs)),
      h('td', { class: 'num' }, duration(r.p95JctMs)), h('td', { class: 'num' }, r.jain.toFixed(3)),
      h('td', { class: 'num' }, pct(r.slowed, 1)),
      h('td', {}, i === w.recommended ? 'recommended' : r.meetsObjective ? 'meets' : 'misses')));
    whatIfBox.replaceChildren(
      ...[measuredLine(w.measured)].filter(Boolean),
      h('p', { class: 'subtle', id: 'whatif-state' }, `${w.queue ? `Queue ${w.queue}'s override of P(Altruism), judged on its jobs: the` : 'The'} last ${w.jobs} finished jobs replayed on ${w.nodes} nodes like these, leftover cap `
        + `${w.leftoverCap ? num(w.leftoverCap) : 'none'}, ${w.computedOnMs ? time(w.computedOnMs) : ''}`
        + `${w.state === 'computing' ? ' (recomputing)' : ''}. Objective: ${w.objective}.`),
      h('div', { class: 'grid2' },
        tradeoffChart({ id: 'whatif-jain', points: pts((r) => r.jain), xLabel: "Jain's index (right is fairer)",
          yLabel: 'average JCT (s)', title: 'average JCT against fairness', xFormat: (v) => v.toFixed(2) }),
        tradeoffChart({ id: 'whatif-slowed', points: pts((r) => r.slowed * 100), xLabel: 'jobs slowed > 20% (%)',
          yLabel: 'average JCT (s)', title: 'average JCT against slowed jobs' })),
      h('table', { id: 'whatif-table' }, h('thead', {}, h('tr', {}, h('th', { class: 'num' }, 'P(Altruism)'),
        h('th', { class: 'num' }, 'avg JCT'), h('th', { class: 'num' }, 'p95 JCT'), h('th', { class: 'num' }, 'Jain'),
        h('th', { class: 'num' }, 'slowed'), h('th', {}, 'objective'))), h('tbody', {}, ...rows)));
  }

  function show(kind, text) {
    result.className = `result ${kind}`;
    result.textContent = text;
  }

  async function apply(p, queue, clear) {
    confirmBox.hidden = true;
    review.disabled = true;
    try {
      const r = await api.setAltruism(p, secret.value, who.value.trim(), queue, clear);
      show('ok', clear ? `Queue ${queue} now follows the cluster's P(Altruism), ${num(r.p)}.`
        : queue ? `Queue ${queue}'s P(Altruism) is now ${num(r.queues[queue])}.` : `P(Altruism) is now ${num(r.p)}.`);
      drawHistory(r);
      await refresh();
    } catch (e) {
      show('error', `Not changed: ${e.message}`);
    } finally {
      review.disabled = false;
    }
  }

  function ask(e) {
    e.preventDefault();
    result.className = '';
    result.textContent = '';
    const queue = queueSel.value;
    const clear = queue !== '' && pInput.value.trim() === '';
    const p = Number(pInput.value);
    if (!clear && (pInput.value.trim() === '' || !Number.isFinite(p) || p < 0 || p > 1)) {
      show('error', 'P(Altruism) must be a number between 0 and 1.');
      return;
    }
    if (!secret.value) {
      show('error', 'Enter the admin credential (loom.admin.secret).');
      return;
    }
    const q = sched && queue ? overridable(sched.queues).find((x) => queueKey(x) === queue) : null;
    const from = q ? num(q.pAltruism) : sched ? num(sched.pAltruism) : '?';
    const what = queue ? `queue ${queue}'s P(Altruism)` : 'P(Altruism)';
    if (clear) {
      confirmBox.replaceChildren(
        h('p', {}, h('strong', {}, `Remove queue ${queue}'s override (${from})?`), ` Its apps then follow the cluster's P(Altruism), ${sched ? num(sched.pAltruism) : '?'}.`),
        h('div', { class: 'actions' },
          h('button', { class: 'btn danger', type: 'button', id: 'confirm-change', onclick: () => apply(0, queue, true) }, 'Remove the override'),
          h('button', { class: 'btn secondary', type: 'button', id: 'cancel-change', onclick: () => { confirmBox.hidden = true; } }, 'Cancel')));
      confirmBox.hidden = false;
      return;
    }
    confirmBox.replaceChildren(
      h('p', {}, h('strong', {}, `Set ${what} from ${from} to ${num(p)}?`),
        ' Every job\'s next decisions use it at once. ',
        p === 0 ? 'At 0, no job yields: Loom schedules as DRF does.' : p === 1 ? 'At 1, every job yields whatever it can.' : ''),
      expected(p, queue) || h('p', { class: 'subtle', id: 'expected' }, queue
        ? `Choose queue ${queue}'s override under "What P(Altruism) would do" to see what this would change.`
        : 'No what-if yet to say what this would change.'),
      h('div', { class: 'actions' },
        h('button', { class: 'btn danger', type: 'button', id: 'confirm-change', onclick: () => apply(p, queue, false) }, `Set ${what} to ${num(p)}`),
        h('button', { class: 'btn secondary', type: 'button', id: 'cancel-change', onclick: () => { confirmBox.hidden = true; } }, 'Cancel')));
    confirmBox.hidden = false;
  }

  function drawHistory(a) {
    history.replaceChildren(...[...a.changes].reverse().map((c) => h('tr', {},
      h('td', {}, time(c.unixMs)), h('td', {}, c.queue || 'cluster'),
      h('td', { class: 'num' }, c.cleared ? 'override removed' : num(c.p)), h('td', {}, c.who))));
  }

  async function refresh() {
    const [s, a, w] = await Promise.all([api.scheduler(), api.altruism(), api.whatIf(whatIfQueue.value)]);
    sched = s;
    drawWhatIf(w);
    current.replaceChildren(
      h('div', { class: 'card' }, h('div', { class: 'label' }, 'P(Altruism)'), h('div', { class: 'value big', id: 'p-now' }, num(a.p)),
        h('div', { class: 'detail', id: 'queue-overrides' }, Object.keys(a.queues || {}).length
          ? `overridden for ${Object.entries(a.queues).map(([q, v]) => `${q}: ${num(v)}`).join(', ')}` : 'no queue overrides it')),
      h('div', { class: 'card' }, h('div', { class: 'label' }, 'leftover order'), h('div', { class: 'value' }, s.leftoverOrder),
        h('div', { class: 'detail' }, ORDERS[s.leftoverOrder] || '')),
      h('div', { class: 'card' }, h('div', { class: 'label' }, 'leftover cap'), h('div', { class: 'value' }, s.leftoverCap ? num(s.leftoverCap) : 'none')),
      h('div', { class: 'card', id: 'share-growth' }, h('div', { class: 'label' }, 'share growth'), h('div', { class: 'value' }, s.shareGrowth ? 'on' : 'off'),
        h('div', { class: 'detail' }, s.shareGrowth
          ? 'AMs plan against their share as it grows while other jobs finish: they yield more now, by the same finish'
          : 'AMs plan within their current share (loom.scheduler.share-growth)')),
      h('div', { class: 'card' }, h('div', { class: 'label' }, 'policy'), h('div', { class: 'value' }, s.policy)),
      h('div', { class: 'card', id: 'rest-writes' }, h('div', { class: 'label' }, 'REST calls that change state'),
        h('div', { class: 'value' }, s.restWrites ? 'on' : 'off'),
        h('div', { class: 'detail' }, s.restWrites
          ? 'submit, kill and the app PUTs are served over REST'
          : 'submit, kill and the app PUTs answer 403: with SIMPLE auth anyone reaching this port could run commands. '
            + 'Set loom.webapp.rest-write.enabled=true only where every client is trusted, or turn on Kerberos (SPNEGO).')));
    if (pInput.value === '' && document.activeElement !== pInput && queueSel.value === '') pInput.value = a.p;
    const leaves = overridable(s.queues);
    if (queueSel.options.length !== leaves.length + 1) {
      queueSel.replaceChildren(queueSel.options[0], ...leaves.map((q) => h('option', { value: queueKey(q) }, `queue ${queueKey(q)}`)));
      whatIfQueue.replaceChildren(whatIfQueue.options[0], ...leaves.map((q) => h('option', { value: queueKey(q) }, `queue ${queueKey(q)}'s override`)));
    }
    drawHistory(a);
  }

  main.append(h('h1', {}, 'Operations'), current,
    h('div', { class: 'grid2' },
      h('section', { class: 'panel' }, h('h2', {}, 'Change P(Altruism)'),
        h('p', { class: 'subtle' }, 'How often a job yields what it does not need now: 0 schedules as DRF, 1 yields at every decision. '
          + 'A queue can override it for its apps; to remove an override, choose the queue and leave the value empty.'),
        h('form', { class: 'stack', id: 'altruism-form', onsubmit: ask },
          h('label', { for: 'queue' }, 'for'), queueSel,
          h('label', { for: 'p' }, 'new P(Altruism)'), pInput,
          h('label', { for: 'secret' }, 'admin credential'), secret,
          h('label', { for: 'who' }, 'your name'), who,
          h('div', { class: 'actions' }, review)),
        confirmBox, result),
      h('section', { class: 'panel' }, h('h2', {}, 'Changes'),
        h('table', { id: 'altruism-history' }, h('thead', {}, h('tr', {}, h('th', {}, 'when'), h('th', {}, 'for'), h('th', { class: 'num' }, 'P(Altruism)'), h('th', {}, 'by'))),
          history))),
    h('section', { class: 'panel' }, h('h2', {}, 'What P(Altruism) would do'),
      h('p', { class: 'subtle' }, 'The simulator replays this cluster\'s recently finished jobs at each P(Altruism): faster on average, '
        + 'at what cost in fairness and in jobs slowed against DRF (P(Altruism) 0).'),
      h('div', { class: 'stack' }, h('label', { for: 'whatif-queue' }, 'vary'), whatIfQueue), whatIfBox));
  return poll(refresh, 10000);
}

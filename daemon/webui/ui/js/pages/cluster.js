// The cluster: counts, utilisation per resource now, fairness and
// utilisation over time, placement against locality, nodes, queues and
// the running apps' shares.

import { h, badge, bar, inner, link, mb, num, pct, time, vector, KINDS } from '../dom.js';
import { api } from '../api.js';
import { lineChart, utilisationChart } from '../charts.js';
import { poll } from '../live.js';
import { placementsView } from '../placements.js';

const KIND_LINE = {
  'memory-mb': '#1c4fa8',
  vcores: '#2b7a3b',
  'loom.io/disk': '#8e44ad',
  'loom.io/network': '#c0392b',
  'yarn.io/gpu': '#6b7380',
};

function card(label, value, detail) {
  return h('div', { class: 'card' }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value),
    detail ? h('div', { class: 'detail' }, detail) : null);
}

function cards(m, sched) {
  return [
    card('apps running', num(m.appsRunning), `${num(m.appsPending)} pending`),
    card('apps completed', num(m.appsCompleted), `${num(m.appsFailed)} failed, ${num(m.appsKilled)} killed`),
    card('containers', num(m.containersAllocated), `${num(m.containersPending)} asks pending`),
    card('nodes active', num(m.activeNodes), `${num(m.lostNodes)} lost, ${num(m.unhealthyNodes)} unhealthy, ${num(m.totalNodes)} in all`),
    card('memory in use', mb(m.allocatedMB), `of ${mb(m.totalMB)}`),
    card('vcores in use', num(m.allocatedVirtualCores), `of ${num(m.totalVirtualCores)}`),
    card('policy', sched.policy, `P(Altruism) ${num(sched.pAltruism)}, ${sched.leftoverOrder}`),
  ];
}

function utilisation(sched, width) {
  const rows = KINDS.filter((k) => (sched.capacity[k.key] || 0) > 0).map((k) => ({
    label: k.label, used: sched.used[k.key] || 0, capacity: sched.capacity[k.key],
    usedText: k.show(sched.used[k.key] || 0), capacityText: k.show(sched.capacity[k.key]),
  }));
  if (!rows.length) return h('p', { class: 'notice' }, 'The cluster has no capacity: no node has registered.');
  return utilisationChart(rows, { width });
}

function fairness(tl, width) {
  const samples = tl.samples || [];
  const kinds = KINDS.filter((k) => samples.some((x) => (x.utilisation[k.key] || 0) > 0));
  const series = [{ name: "Jain's index", color: '#1d2126', width: 3.5, points: samples.map((x) => [x.unixMs, x.jain]) }];
  for (const k of kinds) {
    series.push({ name: `${k.label} utilisation`, color: KIND_LINE[k.key], width: 2, dash: '7 4',
      points: samples.map((x) => [x.unixMs, x.utilisation[k.key] || 0]) });
  }
  return lineChart({ series, width, height: 300, xLabel: 'time', yLabel: "Jain's index; used / capacity", yMin: 0, yMax: 1,
    yFormat: (v) => v.toFixed(1), title: "Jain's index and utilisation over time", id: 'fairness',
    empty: 'No samples yet: the ResourceManager samples the cluster about once a second.' });
}

// altruismLive is what altruism does, over the same window: what the
// running apps yield of their fair shares and what they hold beyond them
// (the leftover handed out), with the latest rate of containers granted
// for ALTRUISTIC asks and the apps behind their fair-share pace.
function altruismLive(tl, width) {
  const samples = tl.samples || [];
  if (!samples.length) return h('p', { class: 'subtle' }, 'No samples yet.');
  const last = samples[samples.length - 1];
  const top = Math.max(0.05, ...samples.map((x) => Math.max(x.yielded, x.heldOverShare)));
  return h('div', {},
    h('div', { class: 'cards', id: 'altruism-now' },
      card('yielded now', pct(last.yielded, 1), 'of the cluster (dominant share): within running apps\' shares, neither held nor asked for as DEFAULT'),
      card('held from the leftover', pct(last.heldOverShare, 1), 'of the cluster: what apps hold beyond their shares'),
      card('ALTRUISTIC containers', `${num(+last.altruisticPerSec.toFixed(1))}/s`, 'granted for ALTRUISTIC asks, over the last second'),
      card('apps behind their share', num(last.behindShare), 'holding less than their share while DEFAULT asks of theirs wait')),
    lineChart({
      series: [
        { name: 'yielded', color: '#2b7a3b', width: 2.5, points: samples.map((x) => [x.unixMs, x.yielded]) },
        { name: 'held from the leftover', color: '#c0392b', width: 2.5, dash: '7 4', points: samples.map((x) => [x.unixMs, x.heldOverShare]) },
      ],
      width, height: 240, xLabel: 'time', yLabel: 'share of the cluster', yMin: 0, yMax: top,
      yFormat: (v) => `${Math.round(v * 100)}%`, title: 'what altruism yields and hands out over time', id: 'altruism-live',
    }));
}

function nodesTable(nodes) {
  const list = (nodes.nodes && nodes.nodes.node) || [];
  if (!list.length) return h('p', { class: 'notice' }, 'No NodeManager has registered.');
  return h('div', { class: 'table-wrap' }, h('table', { id: 'nodes' },
    h('thead', {}, h('tr', {}, h('th', {}, 'node'), h('th', {}, 'state'), h('th', {}, 'rack'), h('th', {}, 'node label'),
      h('th', { class: 'num' }, 'containers'),
      h('th', {}, 'memory used'), h('th', { class: 'num' }, 'memory free'), h('th', {}, 'vcores used'), h('th', { class: 'num' }, 'vcores free'),
      h('th', {}, 'last health report'), h('th', {}, 'health'))),
    h('tbody', {}, list.map((n) => {
      const memTotal = n.usedMemoryMB + n.availMemoryMB;
      const vTotal = n.usedVirtualCores + n.availableVirtualCores;
      const health = n.healthReport || (n.state === 'RUNNING' ? 'healthy' : '');
      return h('tr', { 'data-node-id': n.id },
        h('td', { class: 'mono' }, n.nodeHTTPAddress ? link(`http://${n.nodeHTTPAddress}/`, n.id) : n.id),
        h('td', {}, badge(n.state)), h('td', {}, n.rack),
        h('td', { class: 'label' }, (n.nodeLabels || []).join(', ') || 'default'), h('td', { class: 'num' }, num(n.numContainers)),
        h('td', {}, bar(memTotal ? n.usedMemoryMB / memTotal : 0), mb(n.usedMemoryMB)), h('td', { class: 'num' }, mb(n.availMemoryMB)),
        h('td', {}, bar(vTotal ? n.usedVirtualCores / vTotal : 0), num(n.usedVirtualCores)), h('td', { class: 'num' }, num(n.availableVirtualCores)),
        h('td', {}, time(n.lastHealthUpdate)), h('td', { class: 'wrap' }, health));
    }))));
}

// queueTree is the queues of a tree (a Fair Scheduler allocation file or
// a Capacity Scheduler tree), in the tree's order, each indented by its
// depth: weight, guarantee, maximum, DRF share now and use; a leaf's
// running apps and P(Altruism), marked when it overrides the cluster's.
function queueTree(sched) {
  return h('div', { class: 'table-wrap' }, h('table', { id: 'queues', class: 'tree' },
    h('thead', {}, h('tr', {}, h('th', {}, 'queue'), h('th', { class: 'num' }, 'weight'), h('th', {}, 'guarantee'),
      h('th', {}, 'maximum'), h('th', {}, 'DRF share'), h('th', {}, 'in use'), h('th', { class: 'num' }, 'apps'),
      h('th', {}, 'P(Altruism)'))),
    h('tbody', {}, sched.queues.map((q) => {
      const depth = q.depth || 0;
      const name = h('td', { class: 'queue-name', title: q.path, style: `padding-left: ${8 + depth * 18}px` },
        depth ? h('span', { class: 'tree-mark', 'aria-hidden': 'true' }, '\u2514 ') : null, q.leaf ? q.name : h('strong', {}, q.name));
      let p = '';
      if (q.leaf) p = q.pAltruismOverride ? h('span', { class: 'override' }, `${num(q.pAltruism)} (override)`) : num(q.pAltruism);
      return h('tr', { 'data-queue': q.path, 'data-depth': depth, class: q.leaf ? 'leaf' : 'parent' }, name,
        h('td', { class: 'num' }, num(q.weight)), h('td', {}, vector(q.min)), h('td', {}, vector(q.max)),
        h('td', {}, vector(q.share)), h('td', {}, vector(q.usage)), h('td', { class: 'num' }, num(q.apps)), h('td', {}, p));
    }))));
}

function queuesTable(sched) {
  if (sched.queues.some((q) => q.path)) return queueTree(sched);
  return h('table', { id: 'queues' },
    h('thead', {}, h('tr', {}, h('th', {}, 'queue'), h('th', { class: 'num' }, 'weight'), h('th', { class: 'num' }, 'running apps'), h('th', {}, 'in use'))),
    h('tbody', {}, sched.queues.map((q) => h('tr', {}, h('td', {}, q.name), h('td', { class: 'num' }, num(q.weight)),
      h('td', { class: 'num' }, num(q.apps)), h('td', {}, vector(q.usage))))));
}

function sharesTable(sched) {
  if (!sched.apps.length) return h('p', { class: 'subtle' }, 'No app is running.');
  return h('div', { class: 'table-wrap' }, h('table', { id: 'shares' },
    h('thead', {}, h('tr', {}, h('th', {}, 'app'), h('th', {}, 'user'), h('th', {}, 'queue'), h('th', {}, 'DRF share A_k (dominant)'),
      h('th', {}, 'in use (dominant)'), h('th', {}, 'share'), h('th', { class: 'num' }, 'containers'),
      h('th', { class: 'num' }, 'DEFAULT asks'), h('th', { class: 'num' }, 'ALTRUISTIC asks'), h('th', { class: 'num' }, 'remaining work'),
      h('th', { title: 'its fluid finish now against the span it was first promised; late past 1 + promise slack times it, when it moves up the leftover order' }, 'first promise'))),
    h('tbody', {}, sched.apps.map((a) => h('tr', { 'data-app-id': a.id },
      h('td', {}, h('a', { href: `#/apps/${a.id}` }, a.name || a.id)), h('td', {}, a.user), h('td', {}, a.queue),
      h('td', {}, bar(a.dominantShare), pct(a.dominantShare, 1)), h('td', {}, bar(a.dominantUsage), pct(a.dominantUsage, 1)),
      h('td', {}, vector(a.share)), h('td', { class: 'num' }, num(a.running)),
      h('td', { class: 'num' }, num(a.pendingDefault)), h('td', { class: 'num' }, num(a.pendingAltruistic)),
      h('td', { class: 'num' }, num(a.remainingWork)), promiseCell(a.promise))))));
}

// promiseCell says how far an app's fluid finish has moved from the span
// it was first promised: "1.2x", or "3.1x, late" past the line.
function promiseCell(p) {
  if (!p || !(p.spanMs > 0)) return h('td', { class: 'promise subtle' }, '\u2014');
  const ratio = `${(p.finishMs / p.spanMs).toFixed(1)}x`;
  const title = `finish ${(p.finishMs / 1000).toFixed(1)} s from its first promise of ${(p.spanMs / 1000).toFixed(1)} s; late past ${(p.limitMs / 1000).toFixed(1)} s`;
  return h('td', { class: p.late ? 'promise late' : 'promise', title }, p.late ? `${ratio}, late` : ratio);
}

function panel(title) {
  const body = h('div', {}, h('p', { class: 'subtle' }, 'Loading…'));
  const el = h('section', { class: 'panel' }, h('h2', {}, title), body);
  return { el, body };
}

export function render(main) {
  const cardRow = h('div', { class: 'cards' });
  const util = panel('Utilisation now');
  const queues = panel('Queues');
  const fair = panel("Fairness and utilisation over time");
  const alt = panel('What altruism does');
  const place = panel('Placement against locality');
  const nodes = panel('Nodes');
  const shares = panel('Running apps: share against use');
  const top = h('div', { class: 'grid2' }, util.el, queues.el);
  main.append(h('h1', {}, 'Cluster'), cardRow, top, fair.el, alt.el, place.el, nodes.el, shares.el);
  return poll(async () => {
    const [m, sched, tl, ns] = await Promise.all([api.metrics(), api.scheduler(), api.timeline(), api.nodes()]);
    cardRow.replaceChildren(...cards(m.clusterMetrics, sched));
    // A queue tree's table is wide: it takes a row of its own.
    top.classList.toggle('stacked', sched.queues.some((q) => q.path));
    util.body.replaceChildren(utilisation(sched, inner(util.el)));
    queues.body.replaceChildren(queuesTable(sched));
    fair.body.replaceChildren(fairness(tl, inner(fair.el)));
    alt.body.replaceChildren(altruismLive(tl, inner(alt.el)));
    place.body.replaceChildren(placementsView(sched.placements, 'placements', "the cluster's"));
    nodes.body.replaceChildren(nodesTable(ns));
    shares.body.replaceChildren(sharesTable(sched));
  }, 5000);
}

// The cluster: counts, utilisation per resource now, fairness and
// utilisation over time, nodes, queues and the running apps' shares.

import { h, badge, bar, mb, num, pct, time, vector, KINDS } from '../dom.js';
import { api } from '../api.js';
import { lineChart, utilisationChart } from '../charts.js';
import { poll } from '../live.js';

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
  return h('div', { class: 'cards' },
    card('apps running', num(m.appsRunning), `${num(m.appsPending)} pending`),
    card('apps completed', num(m.appsCompleted), `${num(m.appsFailed)} failed, ${num(m.appsKilled)} killed`),
    card('containers', num(m.containersAllocated), `${num(m.containersPending)} asks pending`),
    card('nodes active', num(m.activeNodes), `${num(m.lostNodes)} lost, ${num(m.unhealthyNodes)} unhealthy, ${num(m.totalNodes)} in all`),
    card('memory in use', mb(m.allocatedMB), `of ${mb(m.totalMB)}`),
    card('vcores in use', num(m.allocatedVirtualCores), `of ${num(m.totalVirtualCores)}`),
    card('policy', sched.policy, `P(Altruism) ${num(sched.pAltruism)}, ${sched.leftoverOrder}`));
}

function utilisation(sched) {
  const rows = KINDS.filter((k) => (sched.capacity[k.key] || 0) > 0).map((k) => ({
    label: k.label, used: sched.used[k.key] || 0, capacity: sched.capacity[k.key],
    usedText: k.show(sched.used[k.key] || 0), capacityText: k.show(sched.capacity[k.key]),
  }));
  if (!rows.length) return h('p', { class: 'notice' }, 'The cluster has no capacity: no node has registered.');
  return utilisationChart(rows);
}

function fairness(tl) {
  const samples = tl.samples || [];
  const kinds = KINDS.filter((k) => samples.some((x) => (x.utilisation[k.key] || 0) > 0));
  const series = [{ name: "Jain's index", color: '#1d2126', width: 3.5, points: samples.map((x) => [x.unixMs, x.jain]) }];
  for (const k of kinds) {
    series.push({ name: `${k.label} utilisation`, color: KIND_LINE[k.key], width: 1.8, dash: '6 3',
      points: samples.map((x) => [x.unixMs, x.utilisation[k.key] || 0]) });
  }
  return lineChart({ series, xLabel: 'time', yLabel: 'index, fraction of capacity', yMin: 0, yMax: 1,
    yFormat: (v) => v.toFixed(1), title: "Jain's index and utilisation over time", id: 'fairness' });
}

function nodesTable(nodes) {
  const list = (nodes.nodes && nodes.nodes.node) || [];
  if (!list.length) return h('p', { class: 'notice' }, 'No NodeManager has registered.');
  return h('div', { class: 'table-wrap' }, h('table', { id: 'nodes' },
    h('thead', {}, h('tr', {}, h('th', {}, 'node'), h('th', {}, 'state'), h('th', {}, 'rack'), h('th', { class: 'num' }, 'containers'),
      h('th', {}, 'memory used'), h('th', { class: 'num' }, 'memory free'), h('th', {}, 'vcores used'), h('th', { class: 'num' }, 'vcores free'),
      h('th', {}, 'last heartbeat'), h('th', {}, 'health'))),
    h('tbody', {}, list.map((n) => {
      const memTotal = n.usedMemoryMB + n.availMemoryMB;
      const vTotal = n.usedVirtualCores + n.availableVirtualCores;
      return h('tr', { 'data-node-id': n.id },
        h('td', { class: 'mono' }, n.nodeHTTPAddress ? h('a', { href: `http://${n.nodeHTTPAddress}/`, rel: 'noreferrer' }, n.id) : n.id),
        h('td', {}, badge(n.state)), h('td', {}, n.rack), h('td', { class: 'num' }, num(n.numContainers)),
        h('td', {}, bar(memTotal ? n.usedMemoryMB / memTotal : 0), mb(n.usedMemoryMB)), h('td', { class: 'num' }, mb(n.availMemoryMB)),
        h('td', {}, bar(vTotal ? n.usedVirtualCores / vTotal : 0), num(n.usedVirtualCores)), h('td', { class: 'num' }, num(n.availableVirtualCores)),
        h('td', {}, time(n.lastHealthUpdate)), h('td', { class: 'wrap' }, n.healthReport || 'healthy'));
    }))));
}

function queuesTable(sched) {
  return h('table', { id: 'queues' },
    h('thead', {}, h('tr', {}, h('th', {}, 'queue'), h('th', { class: 'num' }, 'weight'), h('th', { class: 'num' }, 'running apps'), h('th', {}, 'in use'))),
    h('tbody', {}, sched.queues.map((q) => h('tr', {}, h('td', {}, q.name), h('td', { class: 'num' }, num(q.weight)),
      h('td', { class: 'num' }, num(q.apps)), h('td', {}, vector(q.usage))))));
}

function sharesTable(sched) {
  if (!sched.apps.length) return h('p', { class: 'subtle' }, 'No app is running.');
  return h('div', { class: 'table-wrap' }, h('table', { id: 'shares' },
    h('thead', {}, h('tr', {}, h('th', {}, 'app'), h('th', {}, 'queue'), h('th', {}, 'DRF share A_k'), h('th', {}, 'in use'),
      h('th', { class: 'num' }, 'DEFAULT asks'), h('th', { class: 'num' }, 'ALTRUISTIC asks'), h('th', { class: 'num' }, 'remaining work'))),
    h('tbody', {}, sched.apps.map((a) => h('tr', { 'data-app-id': a.id },
      h('td', {}, h('a', { href: `#/apps/${a.id}` }, a.name || a.id)), h('td', {}, a.queue),
      h('td', {}, bar(a.dominantShare), pct(a.dominantShare, 1)), h('td', {}, bar(a.dominantUsage), pct(a.dominantUsage, 1)),
      h('td', { class: 'num' }, num(a.pendingDefault)), h('td', { class: 'num' }, num(a.pendingAltruistic)),
      h('td', { class: 'num' }, num(a.remainingWork)))))));
}

export function render(main) {
  main.append(h('h1', {}, 'Cluster'));
  const body = h('div', {}, h('p', { class: 'subtle' }, 'Loading…'));
  main.append(body);
  return poll(async () => {
    const [m, sched, tl, nodes] = await Promise.all([api.metrics(), api.scheduler(), api.timeline(), api.nodes()]);
    body.replaceChildren(
      cards(m.clusterMetrics, sched),
      h('div', { class: 'grid2' },
        h('section', { class: 'panel' }, h('h2', {}, 'Utilisation now'), utilisation(sched)),
        h('section', { class: 'panel' }, h('h2', {}, 'Fairness and utilisation over time'), fairness(tl))),
      h('section', { class: 'panel' }, h('h2', {}, 'Nodes'), nodesTable(nodes)),
      h('div', { class: 'grid2' },
        h('section', { class: 'panel' }, h('h2', {}, 'Running apps: share against use'), sharesTable(sched)),
        h('section', { class: 'panel' }, h('h2', {}, 'Queues'), queuesTable(sched))));
  }, 5000);
}

// Every app, newest first by default: sortable by any column, filtered
// by state, refreshed every 2 s.

import { h, badge, bar, duration, mb, num, time } from '../dom.js';
import { api } from '../api.js';
import { poll, status } from '../live.js';

const STATES = ['NEW', 'NEW_SAVING', 'SUBMITTED', 'ACCEPTED', 'RUNNING', 'FINISHED', 'FAILED', 'KILLED'];

const COLUMNS = [
  { key: 'id', label: 'ID', cell: (a) => h('a', { href: `#/apps/${a.id}`, class: 'mono' }, a.id) },
  { key: 'name', label: 'name' },
  { key: 'user', label: 'user' },
  { key: 'queue', label: 'queue' },
  { key: 'applicationType', label: 'type' },
  { key: 'state', label: 'state', cell: (a) => badge(a.state) },
  { key: 'finalStatus', label: 'final status', cell: (a) => badge(a.finalStatus) },
  { key: 'progress', label: 'progress', cell: (a) => [bar(a.progress / 100), `${Math.round(a.progress)}%`] },
  { key: 'startedTime', label: 'started', cell: (a) => time(a.startedTime) },
  { key: 'elapsedTime', label: 'elapsed', num: true, cell: (a) => duration(a.elapsedTime) },
  { key: 'allocatedMB', label: 'memory', num: true, cell: (a) => (a.allocatedMB > 0 ? mb(a.allocatedMB) : '') },
  { key: 'allocatedVCores', label: 'vcores', num: true, cell: (a) => (a.allocatedVCores > 0 ? num(a.allocatedVCores) : '') },
  { key: 'runningContainers', label: 'containers', num: true, cell: (a) => (a.runningContainers > 0 ? num(a.runningContainers) : '') },
];

// The table's sort and filter outlive a visit to an app's page.
const view = { key: 'startedTime', dir: -1, state: '' };

function compare(a, b) {
  const x = a[view.key];
  const y = b[view.key];
  const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x ?? '').localeCompare(String(y ?? ''));
  return (c || a.id.localeCompare(b.id)) * view.dir;
}

export function render(main) {
  let apps = [];
  const tbody = h('tbody');
  const count = h('span', { class: 'subtle' });
  const headers = COLUMNS.map((c) => {
    const th = h('th', { class: `sortable${c.num ? ' num' : ''}`, 'data-key': c.key, scope: 'col' },
      h('button', { type: 'button', onclick: () => sortBy(c.key) }, c.label));
    return th;
  });
  const select = h('select', { id: 'state-filter', onchange: () => { view.state = select.value; refresh().catch(status); } },
    h('option', { value: '' }, 'all states'), STATES.map((st) => h('option', { value: st }, st)));
  select.value = view.state;

  function draw() {
    for (const th of headers) {
      th.setAttribute('aria-sort', th.dataset.key === view.key ? (view.dir > 0 ? 'ascending' : 'descending') : 'none');
    }
    const rows = [...apps].sort(compare).map((a) => h('tr', { 'data-app-id': a.id },
      COLUMNS.map((c) => h('td', { class: c.num ? 'num' : null }, c.cell ? c.cell(a) : a[c.key]))));
    tbody.replaceChildren(...rows);
    if (!rows.length) {
      tbody.append(h('tr', { class: 'empty' }, h('td', { colspan: COLUMNS.length, class: 'subtle' },
        view.state ? `No app is ${view.state}.` : 'No app has been submitted.')));
    }
    count.textContent = `${apps.length} app${apps.length === 1 ? '' : 's'}`;
  }

  function sortBy(key) {
    if (view.key === key) view.dir = -view.dir;
    else {
      view.key = key;
      view.dir = ['startedTime', 'elapsedTime', 'progress', 'allocatedMB', 'allocatedVCores', 'runningContainers'].includes(key) ? -1 : 1;
    }
    draw();
  }

  async function refresh() {
    const r = await api.apps(view.state);
    apps = (r.apps && r.apps.app) || [];
    draw();
  }

  main.append(h('h1', {}, 'Apps', count),
    h('div', { class: 'toolbar' }, h('label', { class: 'inline', for: 'state-filter' }, 'state', select),
      h('span', { class: 'subtle' }, 'Refreshed every 2 s; click a column to sort.')),
    h('section', { class: 'panel' }, h('div', { class: 'table-wrap' },
      h('table', { id: 'apps' }, h('thead', {}, h('tr', {}, headers)), tbody))));
  draw();
  return poll(refresh, 2000);
}

// One app: what YARN knows of it, its DAG, its task attempts over time,
// its share against its use and where its containers sat against their
// asks' locality.

import { h, badge, bar, duration, inner, link, mb, num, pct, time } from '../dom.js';
import { api } from '../api.js';
import { poll } from '../live.js';
import { lineChart } from '../charts.js';
import { dagSvg } from '../dag.js';
import { ganttSvg } from '../gantt.js';
import { placementsView } from '../placements.js';

function facts(a) {
  const rows = [
    ['user', a.user], ['queue', a.queue], ['type', a.applicationType], ['tags', a.applicationTags],
    ['final status', badge(a.finalStatus)], ['progress', [bar(a.progress / 100), `${Math.round(a.progress)}%`]],
    ['started', time(a.startedTime)], ['finished', time(a.finishedTime)], ['elapsed', duration(a.elapsedTime)],
    ['in use', a.runningContainers > 0 ? `${num(a.runningContainers)} containers, ${mb(a.allocatedMB)}, ${num(a.allocatedVCores)} vcores` : ''],
    ['AM', a.amHostHttpAddress ? link(a.amContainerLogs, `${a.amHostHttpAddress} (logs)`) : ''],
    ['tracking', a.trackingUrl ? link(a.trackingUrl, a.trackingUI) : a.trackingUI],
    ['diagnostics', a.diagnostics],
  ];
  return h('dl', { class: 'facts' }, rows.filter(([, v]) => v !== '' && v !== undefined && v !== null)
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function shareChart(tl, width) {
  const samples = tl.samples || [];
  const top = Math.max(0.1, ...samples.map((x) => Math.max(x.dominantShare, x.dominantUsage)));
  return lineChart({
    id: 'share', title: 'dominant share against use', width, height: 260,
    series: [
      { name: 'DRF share A_k (dominant)', color: '#1c4fa8', width: 3, points: samples.map((x) => [x.unixMs, x.dominantShare]) },
      { name: 'in use (dominant)', color: '#e08a00', width: 2.5, points: samples.map((x) => [x.unixMs, x.dominantUsage]) },
    ],
    xLabel: 'time', yLabel: 'fraction of the cluster', yMin: 0, yMax: Math.min(1, top * 1.1),
    yFormat: (v) => pct(v), empty: 'No samples: the app has held nothing in the sampled window.',
  });
}

// logsTable lists an app's aggregated logs, each file a link to its text.
function logsTable(id, logs) {
  if (!logs.logs.length) {
    return h('p', { class: 'subtle', id: 'logs-message' }, logs.message || 'No logs.');
  }
  const rows = logs.logs.map((l) => h('tr', {},
    h('td', { class: 'mono' }, l.container),
    h('td', {}, h('a', { href: api.logFile(id, l.container, l.file), target: '_blank', rel: 'noopener', class: 'log-file' }, l.file)),
    h('td', { class: 'num' }, `${num(l.size)} B`),
    h('td', { class: 'mono' }, l.node)));
  return h('table', { id: 'logs' }, h('thead', {}, h('tr', {},
    h('th', { scope: 'col' }, 'container'), h('th', { scope: 'col' }, 'file'),
    h('th', { scope: 'col', class: 'num' }, 'size'), h('th', { scope: 'col' }, 'node'))), h('tbody', {}, rows));
}

const FINAL = ['FINISHED', 'FAILED', 'KILLED'];
const SETTLED = ['SUCCEEDED', 'FAILED', 'TIME_OUT', 'DISABLED'];

function noHistory() {
  return h('p', { class: 'notice', id: 'no-history' }, 'No DAG to draw: this app has no DAG history. ',
    'It was not run by Loom\'s DAG ApplicationMaster (a stock YARN ApplicationMaster writes none), or its AM has not written one yet.');
}

export function render(main, id) {
  const title = h('h1', {}, h('span', { class: 'mono' }, id));
  const summary = h('section', { class: 'panel' }, h('p', { class: 'subtle' }, 'Loading…'));
  const dagPanel = h('section', { class: 'panel' }, h('h2', {}, 'DAG'));
  const ganttPanel = h('section', { class: 'panel' }, h('h2', {}, 'Task attempts by node'));
  const sharePanel = h('section', { class: 'panel' }, h('h2', {}, 'Dominant share against use'));
  const placePanel = h('section', { class: 'panel', id: 'placements-panel', hidden: true }, h('h2', {}, 'Placement against locality'));
  const logsPanel = h('section', { class: 'panel', id: 'logs-panel', hidden: true }, h('h2', {}, 'Logs'));
  main.append(h('p', {}, h('a', { href: '#/apps' }, '← all apps')), title, summary, dagPanel, ganttPanel, sharePanel, placePanel, logsPanel);
  let drawn = '';
  let logsSettled = false;

  return poll(async () => {
    let app;
    try {
      app = (await api.app(id)).app;
    } catch (e) {
      if (e.status === 404 || e.status === 400) {
        summary.replaceChildren(h('p', { class: 'notice' }, e.message));
        dagPanel.hidden = ganttPanel.hidden = sharePanel.hidden = placePanel.hidden = true;
        return;
      }
      throw e;
    }
    title.replaceChildren(h('span', { class: 'mono' }, app.id), app.name ? h('span', {}, app.name) : null, badge(app.state));
    summary.replaceChildren(h('h2', {}, 'Summary'), facts(app));

    const [dag, tasks, tl, placed] = await Promise.all([
      api.dag(id).catch((e) => e), api.tasks(id).catch((e) => e), api.appTimeline(id).catch((e) => ({ samples: [], error: e })),
      api.placements(id).catch((e) => e),
    ]);
    if (dag instanceof Error) {
      if (dag.status !== 404) throw dag;
      ganttPanel.hidden = true;
      dagPanel.replaceChildren(h('h2', {}, 'DAG'), noHistory());
    } else {
      // Redraw only what changed: a hovered tooltip survives a refresh.
      const key = JSON.stringify([dag.stages, tasks.tasks, dag.updated_unix_ms]);
      if (key !== drawn) {
        drawn = key;
        dagPanel.replaceChildren(h('h2', {}, 'DAG ', h('span', { class: 'subtle' },
          `${dag.job} · ${dag.stages.length} stages · attempt ${dag.attempt} · ${dag.state}`)),
        h('div', { class: 'scroll-x' }, dagSvg(dag)));
        ganttPanel.hidden = false;
        const list = (tasks instanceof Error ? [] : tasks.tasks) || [];
        ganttPanel.replaceChildren(h('h2', {}, 'Task attempts by node ', h('span', { class: 'subtle' }, `${list.length} attempts`)),
          list.length ? ganttSvg(list, { nowMs: Math.max(0, dag.updated_unix_ms - dag.start_unix_ms), width: inner(ganttPanel, 1000) })
            : h('p', { class: 'subtle' }, 'No task has started yet.'));
      }
    }
    sharePanel.replaceChildren(h('h2', {}, 'Dominant share against use'), shareChart(tl, inner(sharePanel)));
    // An app the RM no longer remembers has no placements to show.
    if (placed instanceof Error && placed.status !== 404) throw placed;
    placePanel.hidden = placed instanceof Error;
    if (!placePanel.hidden) {
      placePanel.replaceChildren(h('h2', {}, 'Placement against locality'), placementsView(placed.placements, 'app-placements', "this app's"));
    }

    // Once the app is over, its aggregated logs, until their list is
    // final.
    if (FINAL.includes(app.state) && !logsSettled) {
      const logs = await api.logs(id);
      logsPanel.hidden = false;
      logsPanel.replaceChildren(h('h2', {}, 'Logs ', h('span', { class: 'subtle' }, `aggregation ${logs.logAggregationStatus}`)),
        logsTable(id, logs));
      logsSettled = SETTLED.includes(logs.logAggregationStatus);
    }
  }, 3000);
}

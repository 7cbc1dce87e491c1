// The task attempts of a job over time, one lane per node. Attempts that
// overlap on a node stack in rows of the lane; colour tells the kind of
// ask that got the container.

import { s, duration } from './dom.js';
import { legend, ticks } from './charts.js';

export const KIND_COLOURS = { DEFAULT: '#2563c9', ALTRUISTIC: '#e08a00' };

// lanes groups attempts by node and packs each into rows without overlap.
export function lanes(tasks, nowMs) {
  const byNode = new Map();
  for (const t of tasks) {
    const node = t.node || '(unknown node)';
    if (!byNode.has(node)) byNode.set(node, []);
    byNode.get(node).push({ ...t, end: t.end_ms > 0 ? t.end_ms : Math.max(nowMs, t.start_ms) });
  }
  return [...byNode.keys()].sort().map((node) => {
    const ts = byNode.get(node).sort((a, b) => a.start_ms - b.start_ms || a.end - b.end);
    const rowEnds = [];
    for (const t of ts) {
      let r = rowEnds.findIndex((e) => e <= t.start_ms);
      if (r < 0) {
        r = rowEnds.length;
        rowEnds.push(0);
      }
      rowEnds[r] = t.end;
      t.row = r;
    }
    return { node, tasks: ts, rows: Math.max(1, rowEnds.length) };
  });
}

export function ganttSvg(tasks, { nowMs, width = 1000 }) {
  const ls = lanes(tasks, nowMs);
  const m = { l: 130, r: 20, t: 10, b: 52 };
  const rowH = 14;
  const rowGap = 3;
  const laneGap = 12;
  const laneH = (l) => l.rows * (rowH + rowGap) - rowGap + laneGap;
  const ph = ls.reduce((a, l) => a + laneH(l), 0);
  const pw = width - m.l - m.r;
  const items = [
    { label: 'DEFAULT ask', color: KIND_COLOURS.DEFAULT, kind: 'rect' },
    { label: 'ALTRUISTIC ask', color: KIND_COLOURS.ALTRUISTIC, kind: 'rect' },
    { label: 'failed attempt', color: '#ffffff', stroke: '#b42323', kind: 'rect' },
    { label: 'still running', color: '#8a9099', stroke: '#1d2126', dash: '3 2', kind: 'rect', opacity: 0.4 },
  ];
  const plotBottom = m.t + ph;
  const leg = legend(items, m.l, plotBottom + m.b - 6, pw);
  const height = plotBottom + m.b + leg.height;
  const svg = s('svg', { id: 'gantt', class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': `task attempts on ${ls.length} nodes` });

  const xmax = Math.max(1, ...ls.flatMap((l) => l.tasks.map((t) => t.end)));
  const xt = ticks(0, xmax / 1000, 8);
  const span = Math.max(xmax, xt[xt.length - 1] * 1000);
  const X = (ms) => m.l + (ms / span) * pw;

  // Lane shading first, the grid over it, the bars on top.
  const bars = [];
  let y = m.t;
  ls.forEach((l, i) => {
    const h = laneH(l);
    if (i % 2 === 0) svg.append(s('rect', { x: 0, y, width, height: h, fill: '#f4f5f2' }));
    svg.append(s('text', { x: m.l - 10, y: y + Math.min(h, rowH + laneGap) / 2 + 4, 'text-anchor': 'end', 'font-size': 12,
      'font-weight': 600, fill: '#1d2126' }, l.node));
    for (const t of l.tasks) {
      const kind = t.kind === 'ALTRUISTIC' ? 'altruistic' : 'default';
      const cls = ['task', kind];
      if (t.state === 'FAILED') cls.push('failed');
      if (t.state === 'RUNNING') cls.push('running');
      const colour = KIND_COLOURS[t.kind] || KIND_COLOURS.DEFAULT;
      const x = X(t.start_ms);
      const w = Math.max(2, X(t.end) - x);
      bars.push(s('rect', { class: cls.join(' '), 'data-stage': t.stage, x: x.toFixed(1), y: y + laneGap / 2 + t.row * (rowH + rowGap),
        width: w.toFixed(1), height: rowH, rx: 2, fill: t.state === 'FAILED' ? '#ffffff' : colour,
        'fill-opacity': t.state === 'RUNNING' ? 0.55 : 1, stroke: t.state === 'FAILED' ? '#b42323' : t.state === 'RUNNING' ? '#1d2126' : 'none',
        'stroke-width': t.state === 'FAILED' || t.state === 'RUNNING' ? 1.5 : 0, 'stroke-dasharray': t.state === 'RUNNING' ? '3 2' : null },
      s('title', {}, `${t.stage} task ${t.task}, attempt ${t.attempt} — ${t.kind}, ${t.state}\n` +
        `${(t.start_ms / 1000).toFixed(1)}s to ${t.end_ms > 0 ? `${(t.end_ms / 1000).toFixed(1)}s` : 'now'} (${duration(t.end - t.start_ms)}) on ${l.node}`)));
    }
    y += h;
  });
  const axis = s('g', { class: 'axis' });
  for (const v of xt) {
    axis.append(s('line', { x1: X(v * 1000), x2: X(v * 1000), y1: m.t, y2: plotBottom + 5, stroke: v === 0 ? '#5c6470' : '#d9dcd5' }));
    axis.append(s('text', { x: X(v * 1000), y: plotBottom + 18, 'text-anchor': 'middle' }, `${+v.toFixed(3)}`));
  }
  axis.append(s('line', { x1: m.l, x2: m.l + pw, y1: plotBottom, y2: plotBottom, stroke: '#5c6470' }));
  svg.append(axis);
  svg.append(s('text', { class: 'axis-title', x: m.l + pw / 2, y: plotBottom + 38, 'text-anchor': 'middle' },
    'seconds since the AM started'));

  svg.append(...bars);
  svg.append(leg.g);
  return svg;
}

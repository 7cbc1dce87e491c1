// The DAG of a job, drawn in layers by depth: a stage sits one column to
// the right of its deepest parent, and every edge runs parent -> child.

import { s, duration, vector } from './dom.js';
import { legend } from './charts.js';

export const STAGE_COLOURS = {
  WAITING: { fill: '#f1f2f0', stroke: '#8a9099', label: 'waiting for parents' },
  RUNNABLE: { fill: '#eef3fd', stroke: '#4f7fd6', label: 'runnable', dash: '4 3' },
  RUNNING: { fill: '#d6e4fb', stroke: '#1c4fa8', label: 'running' },
  SUCCEEDED: { fill: '#d9f1de', stroke: '#2b7a3b', label: 'succeeded' },
  FAILED: { fill: '#fbdede', stroke: '#b42323', label: 'failed' },
};

// layers assigns each stage its depth: 0 for a root, else one more than
// its deepest parent. Unknown parents are ignored; a cycle cannot loop.
export function layers(stages) {
  const byName = new Map(stages.map((st) => [st.name, st]));
  const depth = new Map();
  const visiting = new Set();
  const d = (name) => {
    if (depth.has(name)) return depth.get(name);
    if (visiting.has(name)) return 0;
    visiting.add(name);
    const st = byName.get(name);
    let v = 0;
    for (const p of st.parents || []) if (byName.has(p)) v = Math.max(v, d(p) + 1);
    visiting.delete(name);
    depth.set(name, v);
    return v;
  };
  const out = [];
  for (const st of stages) {
    const k = d(st.name);
    (out[k] ||= []).push(st);
  }
  // Order each layer by where its parents sit, to keep edges short.
  const pos = new Map();
  out.forEach((layer, i) => {
    if (i > 0) {
      const key = (st) => {
        const ps = (st.parents || []).filter((p) => pos.has(p));
        return ps.length ? ps.reduce((a, p) => a + pos.get(p), 0) / ps.length : Infinity;
      };
      layer.sort((a, b) => key(a) - key(b));
    }
    layer.forEach((st, j) => pos.set(st.name, j - (layer.length - 1) / 2));
  });
  return out.map((l) => l || []);
}

const BW = 170;
const BH = 56;
const GX = 70;
const GY = 18;
const PAD = 16;

function truncate(t, n) {
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

export function dagSvg(dag) {
  const ls = layers(dag.stages);
  const tallest = Math.max(1, ...ls.map((l) => l.length));
  const plotW = PAD * 2 + ls.length * (BW + GX) - GX;
  const plotH = PAD * 2 + tallest * (BH + GY) - GY;
  const items = Object.values(STAGE_COLOURS).map((c) => ({ label: c.label, color: c.fill, stroke: c.stroke, dash: c.dash, kind: 'rect' }));
  const width = Math.max(plotW, 640);
  const leg = legend(items, PAD, plotH + 6, width - 2 * PAD);
  const height = plotH + 10 + leg.height;
  const svg = s('svg', { id: 'dag', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
    'aria-label': `DAG of ${dag.job}: ${dag.stages.length} stages` });
  svg.append(s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7,
    orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#6b7380' }))));

  const at = new Map();
  ls.forEach((layer, i) => {
    const off = ((tallest - layer.length) * (BH + GY)) / 2;
    layer.forEach((st, j) => at.set(st.name, { x: PAD + i * (BW + GX), y: PAD + off + j * (BH + GY) }));
  });

  const edges = s('g', { class: 'edges' });
  for (const st of dag.stages) {
    const c = at.get(st.name);
    for (const p of st.parents || []) {
      const f = at.get(p);
      if (!f) continue;
      const x1 = f.x + BW;
      const y1 = f.y + BH / 2;
      const x2 = c.x - 2;
      const y2 = c.y + BH / 2;
      const mx = (x1 + x2) / 2;
      edges.append(s('path', { class: 'edge', 'data-from': p, 'data-to': st.name, d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`,
        fill: 'none', stroke: '#6b7380', 'stroke-width': 1.5, 'marker-end': 'url(#arrow)' }));
    }
  }
  svg.append(edges);

  for (const st of dag.stages) {
    const { x, y } = at.get(st.name);
    const col = STAGE_COLOURS[st.state] || STAGE_COLOURS.WAITING;
    const done = st.tasks > 0 ? Math.min(1, st.succeeded / st.tasks) : 0;
    const counts = [`${st.succeeded}/${st.tasks} done`];
    if (st.running) counts.push(`${st.running} running`);
    if (st.failed) counts.push(`${st.failed} failed`);
    const g = s('g', { class: 'stage', 'data-stage': st.name, 'data-state': st.state, transform: `translate(${x},${y})` },
      s('title', {}, `${st.name} — ${st.state}\n${st.tasks} tasks of ${duration(st.duration_ms)} each, ${vector(st.demand)} per task\n` +
        `${st.succeeded} succeeded, ${st.running} running, ${st.failed} failed attempts` +
        (st.parents.length ? `\nafter ${st.parents.join(', ')}` : '')),
      s('rect', { class: 'box', width: BW, height: BH, rx: 7, fill: col.fill, stroke: col.stroke, 'stroke-width': 1.5,
        'stroke-dasharray': col.dash || null }),
      s('text', { x: 10, y: 20, 'font-size': 13, 'font-weight': 650, fill: '#1d2126' }, truncate(st.name, 21)),
      s('text', { x: 10, y: 37, 'font-size': 11.5, fill: '#3d444d' }, truncate(counts.join(' · '), 28)),
      s('rect', { x: 10, y: 44, width: BW - 20, height: 5, rx: 2.5, fill: '#ffffff', stroke: col.stroke, 'stroke-width': 0.5 }),
      s('rect', { x: 10, y: 44, width: (BW - 20) * done, height: 5, rx: 2.5, fill: col.stroke }));
    svg.append(g);
  }
  svg.append(leg.g);
  return svg;
}

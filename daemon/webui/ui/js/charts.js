// Charts as inline SVG: axes with ticks and titles, and a legend kept
// inside the box, under the plot.

import { h, s, clock } from './dom.js';

// niceStep is 1, 2 or 5 times a power of ten, near span/count.
function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
}

// ticks are round values from min up to the first at or past max, so
// that the top of an axis is labelled.
export function ticks(min, max, count = 5) {
  if (!(max > min)) max = min + 1;
  const step = niceStep(max - min, count);
  const out = [];
  let v = Math.ceil(min / step - 1e-9) * step;
  for (; v < max - step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : +v.toPrecision(12));
  out.push(+v.toPrecision(12));
  return out;
}

const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400].map((x) => x * 1000);

// timeTicks are round clock times between min and max (ms).
export function timeTicks(min, max, count = 6) {
  const span = Math.max(1, max - min);
  const step = TIME_STEPS.find((st) => span / st <= count) || TIME_STEPS[TIME_STEPS.length - 1];
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max; v += step) out.push(v);
  return out;
}

// Approximate text width at 12px, for laying out legends without
// measuring (the chart is built before it is in the page).
const textWidth = (t, size = 12) => String(t).length * size * 0.56;

// legend lays items out in rows from (x, y) within width; it returns the
// group and its height.
export function legend(items, x, y, width) {
  const g = s('g', { class: 'legend', transform: `translate(${x},${y})` });
  let cx = 0;
  let cy = 0;
  const rowH = 18;
  for (const it of items) {
    const w = 26 + textWidth(it.label) + 18;
    if (cx > 0 && cx + w > width) {
      cx = 0;
      cy += rowH;
    }
    const item = s('g', { transform: `translate(${cx},${cy})` });
    if (it.kind === 'rect') {
      item.append(s('rect', { x: 0, y: 3, width: 18, height: 10, rx: 2, fill: it.color, stroke: it.stroke || 'none',
        'stroke-width': it.stroke ? 1.5 : 0, 'stroke-dasharray': it.dash || null, 'fill-opacity': it.opacity ?? 1 }));
    } else {
      item.append(s('line', { x1: 0, y1: 8, x2: 18, y2: 8, stroke: it.color, 'stroke-width': it.width || 2.5,
        'stroke-dasharray': it.dash || null }));
    }
    item.append(s('text', { x: 24, y: 12 }, it.label));
    g.append(item);
    cx += w;
  }
  return { g, height: cy + rowH };
}

function legendHeight(items, width) {
  return legend(items, 0, 0, width).height;
}

// lineChart draws series of [x, y] points. x is a time in ms when
// opts.time is set.
export function lineChart(opts) {
  const {
    width = 900, height = 280, series, xLabel, yLabel, yMin = 0, time = true,
    yFormat = (v) => String(v), xFormat = null, id = null, empty = 'no samples yet',
  } = opts;
  if (!series.some((se) => se.points.length)) {
    return h('p', { class: 'subtle', id }, empty);
  }
  const m = { l: 64, r: 40, t: 14, b: 50 };
  const items = series.map((se) => ({ label: se.name, color: se.color, width: se.width, dash: se.dash }));
  const legH = legendHeight(items, width - m.l - m.r);
  const H = height + legH;
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${width} ${H}`, role: 'img', 'aria-label': opts.title || yLabel, id });
  const pw = width - m.l - m.r;
  const ph = height - m.t - m.b;
  const pts = series.flatMap((se) => se.points);
  const xmin = Math.min(...pts.map((p) => p[0]));
  let xmax = Math.max(...pts.map((p) => p[0]));
  if (xmax <= xmin) xmax = xmin + (time ? 1000 : 1);
  let ymax = opts.yMax ?? Math.max(...pts.map((p) => p[1]), 0);
  if (!(ymax > yMin)) ymax = yMin + 1;
  const yt = ticks(yMin, ymax, 5);
  ymax = yt[yt.length - 1];
  const X = (v) => m.l + ((v - xmin) / (xmax - xmin)) * pw;
  const Y = (v) => m.t + ph - ((v - yMin) / (ymax - yMin)) * ph;

  const axis = s('g', { class: 'axis' });
  for (const v of yt) {
    axis.append(s('line', { x1: m.l, x2: m.l + pw, y1: Y(v), y2: Y(v), stroke: v === yMin ? '#5c6470' : '#e4e6e1' }));
    axis.append(s('text', { x: m.l - 8, y: Y(v) + 4, 'text-anchor': 'end' }, yFormat(v)));
  }
  const xt = time ? timeTicks(xmin, xmax) : ticks(xmin, xmax, 6);
  const xf = xFormat || (time ? clock : (v) => String(v));
  for (const v of xt) {
    axis.append(s('line', { x1: X(v), x2: X(v), y1: m.t + ph, y2: m.t + ph + 5, stroke: '#5c6470' }));
    axis.append(s('text', { x: X(v), y: m.t + ph + 18, 'text-anchor': 'middle' }, xf(v)));
  }
  axis.append(s('line', { x1: m.l, x2: m.l, y1: m.t, y2: m.t + ph, stroke: '#5c6470' }));
  svg.append(axis);
  svg.append(s('text', { class: 'axis-title', x: m.l + pw / 2, y: m.t + ph + 38, 'text-anchor': 'middle' }, xLabel));
  svg.append(s('text', { class: 'axis-title', x: 14, y: m.t + ph / 2, 'text-anchor': 'middle',
    transform: `rotate(-90 14 ${m.t + ph / 2})` }, yLabel));

  for (const se of series) {
    if (!se.points.length) continue;
    const d = se.points.map((p, i) => `${i ? 'L' : 'M'}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join('');
    svg.append(s('path', { d, fill: 'none', stroke: se.color, 'stroke-width': se.width || 2.5,
      'stroke-dasharray': se.dash || null, 'stroke-linejoin': 'round', class: se.cls || null }));
    if (se.points.length === 1) {
      const [x, y] = se.points[0];
      svg.append(s('circle', { cx: X(x), cy: Y(y), r: 3, fill: se.color }));
    }
  }
  svg.append(legend(items, m.l, height - 4, pw).g);
  return svg;
}

// barChart draws one horizontal bar per row, split into used and free, on
// a 0 to 100% axis.
export function utilisationChart(rows, { width = 900, xLabel = 'share of capacity in use' } = {}) {
  const m = { l: 90, r: 190, t: 8, b: 46 };
  const barH = 20;
  const gap = 12;
  const ph = rows.length * (barH + gap);
  const height = m.t + ph + m.b;
  const items = [{ label: 'in use', color: '#1c4fa8', kind: 'rect' }, { label: 'free', color: '#dfe5ee', kind: 'rect', stroke: '#b9c3d3' }];
  const legH = legendHeight(items, width - m.l - m.r);
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${width} ${height + legH}`, role: 'img', 'aria-label': 'utilisation per resource' });
  const pw = width - m.l - m.r;
  const X = (f) => m.l + f * pw;
  const axis = s('g', { class: 'axis' });
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    axis.append(s('line', { x1: X(f), x2: X(f), y1: m.t, y2: m.t + ph, stroke: f === 0 ? '#5c6470' : '#e4e6e1' }));
    axis.append(s('text', { x: X(f), y: m.t + ph + 16, 'text-anchor': 'middle' }, `${f * 100}%`));
  }
  svg.append(axis);
  rows.forEach((r, i) => {
    const y = m.t + i * (barH + gap) + gap / 2;
    const f = r.capacity > 0 ? Math.max(0, Math.min(1, r.used / r.capacity)) : 0;
    svg.append(s('text', { x: m.l - 10, y: y + barH / 2 + 4, 'text-anchor': 'end', class: 'axis-title' }, r.label));
    svg.append(s('rect', { x: X(0), y, width: pw, height: barH, fill: '#dfe5ee', stroke: '#b9c3d3' }));
    svg.append(s('rect', { x: X(0), y, width: f * pw, height: barH, fill: '#1c4fa8' },
      s('title', {}, `${r.label}: ${r.usedText} of ${r.capacityText}`)));
    svg.append(s('text', { x: X(1) + 10, y: y + barH / 2 + 4, 'font-size': 12 },
      `${(f * 100).toFixed(0)}%  ·  ${r.usedText} / ${r.capacityText}`));
  });
  svg.append(s('text', { class: 'axis-title', x: m.l + pw / 2, y: m.t + ph + 36, 'text-anchor': 'middle' }, xLabel));
  svg.append(legend(items, m.l, height - 2, pw).g);
  return svg;
}

// tradeoffChart draws a what-if curve: one point per setting, joined in
// order and labelled, the current setting ringed. points are
// { x, y, label, current }.
export function tradeoffChart(opts) {
  const { width = 440, height = 260, points, xLabel, yLabel, id = null,
    xFormat = (v) => String(v), yFormat = (v) => String(v) } = opts;
  const m = { l: 58, r: 20, t: 14, b: 46 };
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': opts.title || yLabel, id });
  const pw = width - m.l - m.r;
  const ph = height - m.t - m.b;
  let xmin = Math.min(...points.map((p) => p.x));
  let xmax = Math.max(...points.map((p) => p.x));
  if (!(xmax > xmin)) { xmin -= 0.01; xmax += 0.01; }
  const pad = (xmax - xmin) * 0.08;
  const xt = ticks(xmin - pad, xmax + pad, 4);
  xmin = xt[0];
  xmax = xt[xt.length - 1];
  const yt = ticks(0, Math.max(...points.map((p) => p.y)) * 1.15, 4);
  const ymax = yt[yt.length - 1];
  const X = (v) => m.l + ((v - xmin) / (xmax - xmin)) * pw;
  const Y = (v) => m.t + ph - (v / ymax) * ph;
  const axis = s('g', { class: 'axis' });
  for (const v of yt) {
    axis.append(s('line', { x1: m.l, x2: m.l + pw, y1: Y(v), y2: Y(v), stroke: v === 0 ? '#5c6470' : '#e4e6e1' }));
    axis.append(s('text', { x: m.l - 8, y: Y(v) + 4, 'text-anchor': 'end' }, yFormat(v)));
  }
  for (const v of xt) {
    axis.append(s('line', { x1: X(v), x2: X(v), y1: m.t + ph, y2: m.t + ph + 5, stroke: '#5c6470' }));
    axis.append(s('text', { x: X(v), y: m.t + ph + 18, 'text-anchor': 'middle' }, xFormat(v)));
  }
  svg.append(axis);
  svg.append(s('text', { class: 'axis-title', x: m.l + pw / 2, y: m.t + ph + 38, 'text-anchor': 'middle' }, xLabel));
  svg.append(s('text', { class: 'axis-title', x: 14, y: m.t + ph / 2, 'text-anchor': 'middle',
    transform: `rotate(-90 14 ${m.t + ph / 2})` }, yLabel));
  const d = points.map((p, i) => `${i ? 'L' : 'M'}${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join('');
  svg.append(s('path', { d, fill: 'none', stroke: '#2f6f9f', 'stroke-width': 1.5, 'stroke-dasharray': '4 3' }));
  for (const p of points) {
    const g = s('g', { class: p.current ? 'point current' : 'point' });
    g.append(s('circle', { cx: X(p.x), cy: Y(p.y), r: 4, fill: '#2f6f9f' }));
    if (p.current) g.append(s('circle', { cx: X(p.x), cy: Y(p.y), r: 9, fill: 'none', stroke: '#c0392b', 'stroke-width': 2 }));
    g.append(s('text', { x: X(p.x) + 7, y: Y(p.y) - 7, 'font-size': 10 }, p.current ? `${p.label} (now)` : p.label));
    svg.append(g);
  }
  return svg;
}

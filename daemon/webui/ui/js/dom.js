// Small helpers to build HTML and SVG from data without innerHTML: every
// string from the server lands as text, never as markup.

const SVGNS = 'http://www.w3.org/2000/svg';

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// h builds an HTML element: h('td', {class: 'num'}, '42').
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

// s builds an SVG element.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVGNS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

// time is a local date and time, to the second.
export function time(ms) {
  if (!ms || ms <= 0) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// clock is a local time of day.
export function clock(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// duration reads ms as "1h 02m", "3m 05s" or "12.5s".
export function duration(ms) {
  if (ms === null || ms === undefined || ms < 0) return '';
  const sec = ms / 1000;
  if (sec < 60) return `${sec < 10 ? sec.toFixed(1) : Math.round(sec)}s`;
  const m = Math.floor(sec / 60);
  if (m < 60) return `${m}m ${pad(Math.floor(sec % 60))}s`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs}h ${pad(m % 60)}m`;
  return `${Math.floor(hrs / 24)}d ${hrs % 24}h`;
}

// mb reads an amount of memory in MB.
export function mb(v) {
  if (v >= 1024 * 1024) return `${(v / 1024 / 1024).toFixed(1)} TB`;
  if (v >= 1024) return `${(v / 1024).toFixed(v % 1024 === 0 ? 0 : 1)} GB`;
  return `${Math.round(v)} MB`;
}

// pct reads a fraction as a percentage.
export function pct(f, digits = 0) {
  if (!Number.isFinite(f)) return '';
  return `${(f * 100).toFixed(digits)}%`;
}

// num keeps up to three significant decimals.
export function num(v) {
  if (!Number.isFinite(v)) return '';
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  return v.toLocaleString('en-US', { maximumFractionDigits: 3 });
}

export function badge(state) {
  return h('span', { class: `badge ${state}` }, state);
}

export function bar(fraction) {
  const f = Math.max(0, Math.min(1, Number(fraction) || 0));
  return h('span', { class: 'bar', role: 'img', 'aria-label': pct(f) }, h('span', { style: `width:${(f * 100).toFixed(1)}%` }));
}

// Resource kinds in YARN's names, with how to show an amount of each.
export const KINDS = [
  { key: 'memory-mb', label: 'memory', unit: 'MB', show: mb },
  { key: 'vcores', label: 'vcores', unit: '', show: num },
  { key: 'loom.io/disk', label: 'disk', unit: 'MB/s', show: (v) => `${num(v)} MB/s` },
  { key: 'loom.io/network', label: 'network', unit: 'MB/s', show: (v) => `${num(v)} MB/s` },
  { key: 'yarn.io/gpu', label: 'gpu', unit: '', show: num },
];

// vector reads a resource vector as "2 GB, 1 vcores, 40 MB/s disk".
export function vector(v) {
  if (!v) return '';
  const parts = [];
  for (const k of KINDS) {
    const x = v[k.key];
    if (!x) continue;
    parts.push(k.key === 'memory-mb' ? mb(x) : `${k.show(x)} ${k.label}`.replace(' MB/s ', ' MB/s '));
  }
  return parts.join(', ') || '0';
}

// inner is the width a chart has inside a panel, so that its text is
// drawn at its real size.
export function inner(panel, fallback = 900) {
  const w = panel.clientWidth - 34;
  return w > 200 ? Math.round(w) : fallback;
}

// link is an anchor to an http(s) address the server reported (an AM's
// tracking URL, a node's page), or plain text for anything else: a
// javascript: or data: URL from an AM never becomes a link.
export function link(url, text) {
  if (typeof url === 'string' && /^https?:\/\/[^\s]+$/i.test(url)) {
    return h('a', { href: url, rel: 'noreferrer noopener', target: '_blank' }, text ?? url);
  }
  return text ?? url ?? '';
}

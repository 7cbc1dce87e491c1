// Where containers sat against their asks' locality: the node-local,
// rack-local and off-switch shares, with their counts, of the
// containers whose asks named hosts or racks. Those whose asks named
// none ("any") are counted apart: for them locality does not apply, and
// they must not read as 0% node-local.

import { h, num, pct } from './dom.js';

function card(kind, label, value, detail) {
  return h('div', { class: 'card', 'data-placement': kind }, h('div', { class: 'label' }, label),
    h('div', { class: 'value' }, value), h('div', { class: 'detail' }, detail));
}

const containers = (n) => `${num(n)} container${n === 1 ? '' : 's'}`;

// placementsView shows p (dao.Placements) under the element id; whose
// says whose containers they are ("the cluster's", "this app's").
export function placementsView(p, id, whose) {
  const total = p.withLocality + p.any;
  if (!total) return h('p', { class: 'subtle', id }, `No container granted: ${whose} placements start with the first.`);
  if (!p.withLocality) {
    return h('p', { class: 'notice', id, 'data-placement': 'any' },
      `Locality does not apply: ${whose} ${containers(p.any)} were all asked for with no host or rack named, `
      + 'so each went anywhere ("any"): none is node-local, rack-local or off-switch.');
  }
  return h('div', { id },
    h('div', { class: 'cards' },
      card('node-local', 'node-local', pct(p.nodeLocalShare, 1), `${containers(p.nodeLocal)} on a host their asks named`),
      card('rack-local', 'rack-local', pct(p.rackLocalShare, 1), `${containers(p.rackLocal)} on a rack their asks named`),
      card('off-switch', 'off-switch', pct(p.offSwitchShare, 1), `${containers(p.offSwitch)} elsewhere, once delay scheduling stopped waiting`)),
    h('p', { class: 'subtle' }, `Shares of ${whose} ${containers(p.withLocality)} whose asks named hosts or racks`,
      p.any ? `; ${containers(p.any)} more asked for none ("any": AMs, asks without locality) and are not in them.` : '.'));
}

// Loom's web UI: a page per hash route, each reading the REST API and
// refreshing itself while it is shown.

import * as cluster from './pages/cluster.js';
import * as apps from './pages/apps.js';
import * as app from './pages/app.js';
import * as ops from './pages/ops.js';

const routes = [
  { re: /^#?\/?(cluster)?$/, page: cluster, nav: 'cluster' },
  { re: /^#\/apps\/?$/, page: apps, nav: 'apps' },
  { re: /^#\/apps\/([^/]+)$/, page: app, nav: 'apps' },
  { re: /^#\/ops\/?$/, page: ops, nav: 'ops' },
];

let stop = null;

function route() {
  if (stop) stop();
  stop = null;
  const main = document.getElementById('main');
  main.replaceChildren();
  const hash = decodeURIComponent(location.hash || '');
  const r = routes.find((x) => x.re.test(hash));
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('current', r && a.dataset.page === r.nav);
  if (!r) {
    main.append(Object.assign(document.createElement('p'), { className: 'notice', textContent: `No page at ${hash}.` }));
    return;
  }
  const args = hash.match(r.re).slice(1);
  stop = r.page.render(main, ...args) || null;
}

// YARN's UI paths (/cluster/apps, /cluster/app/<id>, ...), which
// clients and bookmarks use, open the matching page.
if (!location.hash) {
  const app = location.pathname.match(/^\/cluster\/app\/([^/]+)/);
  if (app) history.replaceState(null, '', `/#/apps/${app[1]}`);
  else if (/^\/cluster\/apps/.test(location.pathname)) history.replaceState(null, '', '/#/apps');
}
window.addEventListener('hashchange', route);
route();

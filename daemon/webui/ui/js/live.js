// Keeping a page fresh: polling, and saying when the server was last
// heard from or why it was not.

import { clock } from './dom.js';

// status says when the page last heard from the server, or why not.
export function status(error) {
  const banner = document.getElementById('banner');
  const el = document.getElementById('status');
  if (error) {
    banner.textContent = error.status === 0 ? error.message : `${error.exception}: ${error.message}`;
    banner.hidden = false;
    return;
  }
  banner.hidden = true;
  el.textContent = `updated ${clock(Date.now())}`;
}

// poll runs fn now and then every ms after it finishes, until stopped.
export function poll(fn, ms) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    try {
      await fn();
      status(null);
    } catch (e) {
      status(e);
    }
    if (!stopped) timer = setTimeout(run, ms);
  };
  run();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

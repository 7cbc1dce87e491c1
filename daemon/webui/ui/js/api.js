// The REST calls the UI makes, and YARN's RemoteException read back as
// an error with the server's message.

export class ApiError extends Error {
  constructor(status, exception, message) {
    super(message);
    this.status = status;
    this.exception = exception;
  }
}

async function parse(resp) {
  const text = await resp.text();
  let body = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (!resp.ok) {
    const re = body && body.RemoteException;
    throw new ApiError(resp.status, re ? re.exception : `HTTP ${resp.status}`,
      re ? re.message : (text || resp.statusText || `HTTP ${resp.status}`));
  }
  return body;
}

export async function get(path) {
  let resp;
  try {
    resp = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'NetworkError', `cannot reach the ResourceManager (${e.message})`);
  }
  return parse(resp);
}

export async function put(path, body, headers = {}) {
  let resp;
  try {
    resp = await fetch(path, {
      method: 'PUT',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, 'NetworkError', `cannot reach the ResourceManager (${e.message})`);
  }
  return parse(resp);
}

const enc = encodeURIComponent;

export const api = {
  metrics: () => get('/ws/v1/cluster/metrics'),
  nodes: () => get('/ws/v1/cluster/nodes'),
  apps: (states) => get(`/ws/v1/cluster/apps${states ? `?states=${enc(states)}` : ''}`),
  app: (id) => get(`/ws/v1/cluster/apps/${enc(id)}`),
  attempts: (id) => get(`/ws/v1/cluster/apps/${enc(id)}/appattempts`),
  scheduler: () => get('/ws/v1/loom/scheduler'),
  timeline: () => get('/ws/v1/loom/timeline'),
  dag: (id) => get(`/ws/v1/loom/apps/${enc(id)}/dag`),
  tasks: (id) => get(`/ws/v1/loom/apps/${enc(id)}/tasks`),
  appTimeline: (id) => get(`/ws/v1/loom/apps/${enc(id)}/timeline`),
  placements: (id) => get(`/ws/v1/loom/apps/${enc(id)}/placements`),
  logs: (id) => get(`/ws/v1/loom/apps/${enc(id)}/logs`),
  logFile: (id, container, file) => `/ws/v1/loom/apps/${enc(id)}/logs/${enc(container)}/${enc(file)}`,
  altruism: () => get('/ws/v1/loom/scheduler/altruism'),
  whatIf: (queue = '') => get(`/ws/v1/loom/whatif${queue ? `?queue=${enc(queue)}` : ''}`),
  // queue: '' for the cluster's P(Altruism), else that queue's override;
  // clear removes the override.
  setAltruism: (p, secret, user, queue = '', clear = false) => put(`/ws/v1/loom/scheduler/altruism${user ? `?user.name=${enc(user)}` : ''}`,
    clear ? { queue, clear: true } : (queue ? { p, queue } : { p }), { Authorization: `Bearer ${secret}` }),
};

// The jobs list's state in the hash (#/jobs?user=&state=&queue=&gpu_type=&sort=&order=&offset=)
// and the API request for one page of it; shared by the jobs page and app.js's early request.
import { query as qs } from './api.js';

export const PAGE_SIZE = 50;

// The list's state from the hash query, with defaults (admins see every user's jobs).
export function readJobsState(query, admin) {
  return {
    user: query.has('user') ? query.get('user') : (admin ? '*' : ''),
    state: query.get('state') || '',
    queue: query.get('queue') || '',
    gpu_type: query.get('gpu_type') || '',
    sort: query.get('sort') || 'id',
    order: query.get('order') === 'asc' ? 'asc' : 'desc',
    offset: Math.max(0, parseInt(query.get('offset') || '0', 10) || 0),
  };
}

// GET /v1/jobs for that state: one page, with X-Total-Count.
export function jobsUrl(state, admin) {
  return `/v1/jobs${qs({
    user: admin ? state.user : '', state: state.state, queue: state.queue, gpu_type: state.gpu_type,
    sort: state.sort, order: state.order, offset: state.offset, limit: PAGE_SIZE, total: 1,
  })}`;
}

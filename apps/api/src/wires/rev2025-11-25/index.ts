// The 2025-11-25 wire: sessions opened by initialize (Mcp-Session-Id), messages on POST, the session's stream and
// resumption on GET, its end on DELETE; the oldest wire, so it takes every POST a newer one does not claim (batches,
// responses to our requests, messages without a newer revision's `_meta` claim).
import type { Wire } from '../wire.ts';
import { handleDelete } from './delete.ts';
import { ERRORS } from './errors.ts';
import { handleGet } from './get.ts';
import { handlePost } from './post.ts';

export const wire: Wire<true> = {
  revision: '2025-11-25',
  claim: () => true,
  post: (services, _claim, { body, format }, req, res) => handlePost(services, body, format, req, res),
  get: handleGet,
  delete: handleDelete,
  errors: ERRORS,
};

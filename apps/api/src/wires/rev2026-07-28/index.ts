// The 2026-07-28 wire: stateless requests (C26-COEX-1) that carry the revision's `_meta` claim, each authenticated,
// charged and answered on its own POST; no session, so no GET or DELETE.
import type { Wire } from '../wire.ts';
import { classifyPost, type Classification } from './classify.ts';
import { ERRORS } from './errors.ts';
import { sendRefusal, serveModern } from './serve.ts';

type Claimed = Exclude<Classification, { era: 'legacy' }>;

export const wire: Wire<Claimed> = {
  revision: '2026-07-28',
  claim(body, headers) {
    const era = classifyPost(body, headers);
    return era.era === 'legacy' ? undefined : era;
  },
  async post(services, era, _message, req, res) {
    if (era.era === 'refused') {
      sendRefusal(res, era.refusal);
      return;
    }
    if (era.era === 'modern-notification') {
      res.status(202).end();
      return;
    }
    await serveModern(services, era.request, req, res);
  },
  errors: ERRORS,
};

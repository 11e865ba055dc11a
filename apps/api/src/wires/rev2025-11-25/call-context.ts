// A 2025-11-25 request as the use cases see it: its session's owner is the caller, and its messages go to the
// session.
import type { CallContext } from '../../calls/request.ts';
import type { RequestContext } from './context.ts';

const made = new WeakMap<RequestContext, CallContext>();

export function callContextOf(context: RequestContext): CallContext {
  let call = made.get(context);
  if (call) return call;
  const { services, session } = context;
  call = {
    services,
    caller: {
      owner: session.owner,
      address: context.address,
      requestId: context.requestId,
      sessionId: session.sessionId,
      readsByCapability: false,
    },
    // The request's logger is made on first use (post.ts): so is this one.
    get log() {
      return context.log;
    },
    ...(context.span ? { span: context.span } : {}),
  };
  made.set(context, call);
  return call;
}

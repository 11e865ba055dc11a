/**
 * Sessions and what flows through them: sessions and their caps, the session event stream, 2026-07-28 request
 * contexts' records aside (request-context.ts, shared with the records), and input requests (elicitation, sampling).
 */
export { type AnswerVerdict, type InputAnswer, InputBroker } from './input-broker.ts';
export { SessionEvents, type StreamEvent, type StreamMessage } from './session-events.ts';
export { type Session, type SessionAdmission, SessionCap, SessionStore } from './sessions.ts';
export { type SessionCalls } from './session-calls.ts';
export { SigningKeys } from './signing-keys.ts';

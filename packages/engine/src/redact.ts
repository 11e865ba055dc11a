// What must not reach a log line or an error message: credentials in configuration values and URLs.

/**
 * Variables whose whole value is a credential (ADMIN_TOKEN, AUTH_JWT_SECRET, CALLBACK_SECRET, METRICS_TOKEN,
 * AUTH_API_KEYS, ...): an error about one names it and what it accepts, never its value, because start-up errors
 * end up in logs that many people read.
 */
export function isSecretVariable(name: string): boolean {
  return /(^|_)(SECRET|TOKEN|PASSWORD|KEY|KEYS)$/.test(name);
}

/** `scheme://user:password@host` anywhere in a text, with the password masked (REDIS_URL, REDIS_CLUSTER_NODES, ...). */
export function maskUrlPasswords(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:@/\s,'"]*:)[^@/\s,'"]+@/gi, '$1***@');
}

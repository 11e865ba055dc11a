// A walk through one task, printed as it happens: `pnpm demo` against a running api (MCP_URL; MCP_TOKEN, or the
// first AUTH_API_KEYS key, when it asks for one), and the last step of `pnpm start`.
import { McpHttpClient } from '@mcp-tasks/client';

const DEFAULT_URL = 'http://127.0.0.1:3000/mcp';

/** The variables that turn the api's authentication on (docs/configuration.md, "Security"). */
const AUTH_VARIABLES = ['AUTH_API_KEYS', 'AUTH_API_KEYS_FILE', 'AUTH_JWT_SECRET', 'AUTH_JWKS_URL'];

/** Whether the api that `env` configures asks every request for a bearer token. */
export function authRequired(env: NodeJS.ProcessEnv): boolean {
  return AUTH_VARIABLES.some((name) => (env[name] ?? '') !== '');
}

/**
 * The token the demo sends: MCP_TOKEN, else the key of the first AUTH_API_KEYS entry (`principal:key`). A key file
 * holds digests and a JWT is signed elsewhere: with those, only MCP_TOKEN gives one.
 */
export function demoToken(env: NodeJS.ProcessEnv): string | undefined {
  const given = env['MCP_TOKEN'];
  if (given) return given;
  const first = (env['AUTH_API_KEYS'] ?? '').split(',')[0]?.trim() ?? '';
  const colon = first.indexOf(':');
  return colon > 0 && colon < first.length - 1 ? first.slice(colon + 1) : undefined;
}

export async function runDemo(url: string, print: (line: string) => void = console.log, token?: string): Promise<void> {
  const client = new McpHttpClient(url);
  if (token !== undefined) client.headers = { authorization: `Bearer ${token}` };
  await client.initialize();
  print(`demo: connected to ${url} (session ${client.sessionId}, protocol ${client.protocolVersion})`);
  const tools = await demoToolsListed(client);
  print(`demo: tools/list -> ${tools.map((tool) => `${tool.name} (${tool.execution.taskSupport})`).join(', ')}`);

  const created = await client.call('tools/call', { name: 'wait', arguments: { seconds: 3 }, task: { ttl: 600_000 } });
  const task = created['task'] as { taskId: string; status: string; pollInterval: number };
  print(`demo: tools/call wait {seconds: 3} as a task -> ${task.taskId} is ${task.status}`);

  for (;;) {
    const current = (await client.call('tasks/get', { taskId: task.taskId })) as {
      status: string;
      statusMessage?: string;
    };
    print(`demo: tasks/get -> ${current.status}${current.statusMessage ? ` (${current.statusMessage})` : ''}`);
    if (current.status !== 'working') break;
    await new Promise((resolve) => setTimeout(resolve, task.pollInterval));
  }
  const result = await client.call('tasks/result', { taskId: task.taskId });
  print(`demo: tasks/result -> ${JSON.stringify(result)}`);
  await client.terminate();
}

type ListedTool = { name: string; execution: { taskSupport: string } };

/**
 * The tools once the worker's catalog has reached the api: a worker that started beside it publishes them a moment
 * after the api listens, and a call before that is an unknown tool. Up to 30 s.
 */
async function demoToolsListed(client: McpHttpClient): Promise<ListedTool[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { tools } = (await client.call('tools/list')) as { tools: ListedTool[] };
    if (tools.some((tool) => tool.name === 'wait')) return tools;
    if (Date.now() > deadline) throw new Error("no worker serves the demo tool 'wait' (its catalog entry within 30 s)");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A copy-paste example for a terminal: initialize, start a task, poll it, fetch its result. */
export function curlExample(url: string, withToken = false): string {
  // The token itself is not printed: it would land in terminal scroll-back and logs.
  const bearer = withToken ? ` -H "Authorization: Bearer $MCP_TOKEN"` : '';
  const headers = `-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'${bearer}`;
  return [
    `SID=$(curl -s -D - -o /dev/null ${url} ${headers} \\`,
    `  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' \\`,
    `  | tr -d '\\r' | awk 'tolower($1)=="mcp-session-id:" {print $2}')`,
    `curl -s ${url} ${headers} -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25' \\`,
    `  -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count_primes","arguments":{"below":50000000},"task":{"ttl":600000}}}'`,
    `# then, with the taskId from that answer:`,
    `curl -s ${url} ${headers} -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25' \\`,
    `  -d '{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"PASTE-TASK-ID"}}'`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runDemo(process.env['MCP_URL'] ?? DEFAULT_URL, console.log, demoToken(process.env)).catch((error: unknown) => {
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}

// A walk through one task, printed as it happens: `pnpm demo` against a running api (MCP_URL), and the last
// step of `pnpm start`.
import { McpHttpClient } from '@mcp-tasks/client';

const DEFAULT_URL = 'http://127.0.0.1:3000/mcp';

export async function runDemo(url: string, print: (line: string) => void = console.log): Promise<void> {
  const client = await McpHttpClient.connect(url);
  print(`demo: connected to ${url} (session ${client.sessionId}, protocol ${client.protocolVersion})`);
  const { tools } = (await client.call('tools/list')) as {
    tools: { name: string; execution: { taskSupport: string } }[];
  };
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

/** A copy-paste example for a terminal: initialize, start a task, poll it, fetch its result. */
export function curlExample(url: string): string {
  const headers = `-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'`;
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
  runDemo(process.env['MCP_URL'] ?? DEFAULT_URL).catch((error: unknown) => {
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}

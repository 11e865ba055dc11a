/**
 * @mcp-tasks/client — a small MCP-over-HTTP client for the demo, scripts and tests.
 *
 * @example
 * const client = await McpHttpClient.connect('http://127.0.0.1:3000/mcp');
 * const task = await client.createTask('wait', { seconds: 3 });
 * const result = await client.call('tasks/result', { taskId: task.taskId });
 */
export * from './http-client.ts';

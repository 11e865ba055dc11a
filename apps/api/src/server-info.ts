// How the server names itself on both wires (2025-11-25 initialize, 2026-07-28 `_meta` serverInfo).
export const SERVER_INFO = { name: 'mcp-task-runner', version: '0.1.0' };

// The official MCP TypeScript client against the wager MCP server: lists
// the tools (which validates every tool's schemas) and calls some of them
// (which validates structured results against the output schemas).
// Prints one JSON report.
//
//   node e2e/contract/mcp.mjs stdio /path/to/mcp-binary '<calls JSON>'
//   node e2e/contract/mcp.mjs http http://127.0.0.1:PORT/ '<calls JSON>'
// (the binary's environment, WAGER_MCP_TOKEN for HTTP, comes from ours)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, target, callsJSON] = process.argv.slice(2);
const report = { tools: [], calls: [], error: null };
const client = new Client({ name: 'wager-contract-test', version: '1.0.0' });
try {
  const transport =
    mode === 'stdio'
      ? new StdioClientTransport({ command: target, args: [], env: process.env, stderr: 'inherit' })
      : new StreamableHTTPClientTransport(new URL(target), {
          requestInit: { headers: { Authorization: `Bearer ${process.env.WAGER_MCP_TOKEN}` } },
        });
  await client.connect(transport);
  const { tools } = await client.listTools();
  report.tools = tools.map((t) => t.name);
  for (const [name, args] of JSON.parse(callsJSON)) {
    try {
      const r = await client.callTool({ name, arguments: args });
      report.calls.push({ name, isError: !!r.isError, structured: r.structuredContent ?? null, text: r.content?.[0]?.text ?? '' });
    } catch (e) {
      report.calls.push({ name, isError: true, thrown: String(e?.message ?? e) });
    }
  }
} catch (e) {
  report.error = String(e?.stack ?? e);
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(report));

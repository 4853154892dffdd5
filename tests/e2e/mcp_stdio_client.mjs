// `isb mcp` driven by the official TypeScript SDK's stdio client, as a local MCP client launches it.
// Usage: node mcp_stdio_client.mjs ISB ARGS... (the command line of the server). Prints one JSON line of
// observations; the C++ test judges them.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [command, ...args] = process.argv.slice(2);
const obs = { ok: false, steps: [], asked: [] };
const step = (name) => obs.steps.push(name);

const transport = new StdioClientTransport({ command, args, env: { PATH: process.env.PATH ?? '' }, stderr: 'pipe' });
let stderr = '';
transport.stderr?.on('data', (d) => { stderr += d.toString(); });
const client = new Client({ name: 'isb-e2e-stdio', version: '1.0.0' }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  obs.asked.push(request.params.message);
  return { action: 'accept', content: { approve: true } };
});

try {
  await client.connect(transport);
  step('connect');
  obs.serverInfo = client.getServerVersion() ?? null;
  const { tools } = await client.listTools();
  step('listTools');
  obs.toolCount = tools.length;
  obs.hasExec = tools.some((t) => t.name === 'sandbox_exec');
  const created = await client.callTool({ name: 'sandbox_create', arguments: { labels: { via: 'isb-mcp' } } });
  step('create');
  obs.id = created.structuredContent?.id ?? null;
  const ran = await client.callTool({
    name: 'sandbox_exec',
    arguments: { sandbox: obs.id, argv: ['sh', '-c', 'printf "via stdio"; exit 3'] },
  });
  step('exec');
  obs.exec = { stdout: ran.structuredContent?.stdout ?? null, exit_code: ran.structuredContent?.exit_code ?? null };
  // Destructive: the daemon asks the person through the client, across the bridge, before it runs.
  const removed = await client.callTool({ name: 'sandbox_remove', arguments: { sandbox: obs.id } });
  step('remove');
  obs.removed = { isError: removed.isError ?? false, removed: removed.structuredContent?.removed ?? null };
  obs.ok = true;
} catch (e) {
  obs.error = String(e?.stack ?? e);
} finally {
  await client.close().catch(() => {});
  obs.stderr = stderr;
  process.stdout.write(JSON.stringify(obs) + '\n');
}

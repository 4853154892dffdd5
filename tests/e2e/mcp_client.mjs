// The MCP end of the e2e suite: the official TypeScript SDK's Client over Streamable HTTP against a real
// `isb serve`. Usage: node mcp_client.mjs URL TOKEN. Prints one JSON line of observations; the C++ test judges them.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token] = process.argv.slice(2);
const obs = { ok: false, steps: [] };
const step = (name) => obs.steps.push(name);
const text = (result) => (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'isb-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
// A person's answer to isb's question before a destructive call: approved, and the question kept for the test.
obs.asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  obs.asked.push({ message: request.params.message, schema: request.params.requestedSchema ?? null });
  return { action: 'accept', content: { approve: true } };
});

try {
  await client.connect(transport);  // initialize + notifications/initialized
  step('connect');
  obs.sessionId = transport.sessionId ?? null;
  obs.protocolVersion = transport.protocolVersion ?? null;
  obs.serverInfo = client.getServerVersion() ?? null;
  obs.capabilities = client.getServerCapabilities() ?? null;

  const { tools } = await client.listTools();
  step('listTools');
  obs.tools = Object.fromEntries(tools.map((t) => [t.name, t.annotations ?? null]));
  obs.toolsWithoutOutputSchema = tools.filter((t) => !t.outputSchema).map((t) => t.name);

  // The SDK checks structuredContent against each tool's outputSchema: a mismatch throws here.
  const created = await client.callTool({ name: 'sandbox_create', arguments: { labels: { via: 'mcp-sdk' } } });
  step('create');
  obs.create = { isError: created.isError ?? false, id: created.structuredContent?.id ?? null,
                 state: created.structuredContent?.state ?? null, text: text(created) };
  const id = obs.create.id;

  const ran = await client.callTool({
    name: 'sandbox_exec',
    arguments: { sandbox: id, argv: ['sh', '-c', 'printf "hello mcp"; printf oops >&2; exit 7'] },
  });
  step('exec');
  obs.exec = { isError: ran.isError ?? false, stdout: ran.structuredContent?.stdout ?? null,
               stderr: ran.structuredContent?.stderr ?? null, exit_code: ran.structuredContent?.exit_code ?? null,
               textHasResult: text(ran).includes('"exit_code":7') };

  // With a progress token, output arrives as progress notifications before the result.
  const progress = [];
  const streamed = await client.callTool(
    { name: 'sandbox_exec', arguments: { sandbox: id, argv: ['sh', '-c', 'echo one; sleep 0.3; echo two'] } },
    undefined,
    { onprogress: (p) => progress.push(p.message ?? null) },
  );
  step('streamedExec');
  obs.streamed = { progress, stdout: streamed.structuredContent?.stdout ?? null,
                   exit_code: streamed.structuredContent?.exit_code ?? null };

  // A terminal: the session arrives as the first progress notification; input goes in with a second call while
  // the first one streams.
  const tty = { progress: [], session: null, input: null };
  let typed = null;
  const onTty = await client.callTool(
    { name: 'sandbox_exec', arguments: { sandbox: id, argv: ['sh'], tty: true, rows: 10, cols: 33 } },
    undefined,
    {
      onprogress: (p) => {
        const meta = p._meta ?? {};
        if (meta['isb/stream'] === 'session') {
          tty.session = meta['isb/session'] ?? null;
          return;
        }
        tty.progress.push(p.message ?? null);
        // Type at the shell's prompt, as a person would.
        if (typed === null && tty.session && tty.progress.join('').includes('# ')) {
          typed = client.callTool({ name: 'sandbox_exec_input',
                                    arguments: { sandbox: id, session: tty.session, data: 'stty size; tty; exit 4\n' } });
        }
      },
    },
  );
  tty.input = typed ? (await typed).structuredContent ?? null : null;
  tty.exit_code = onTty.structuredContent?.exit_code ?? null;
  tty.resultSession = onTty.structuredContent?.session ?? null;
  tty.stdout = onTty.structuredContent?.stdout ?? null;
  obs.tty = tty;
  step('ttyExec');

  const bad = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox: id, argv: 'ls -l' } });
  step('badInput');
  obs.badInput = { isError: bad.isError ?? false, text: text(bad), structured: bad.structuredContent ?? null };

  try {
    await client.callTool({ name: 'sandbox_no_such_tool', arguments: {} });
    obs.unknownTool = { threw: false };
  } catch (e) {
    obs.unknownTool = { threw: true, code: e.code ?? null, message: String(e.message) };
  }
  step('unknownTool');

  const removed = await client.callTool({ name: 'sandbox_remove', arguments: { sandbox: id } });
  step('remove');
  obs.remove = { isError: removed.isError ?? false, structured: removed.structuredContent ?? null };

  await transport.terminateSession();  // DELETE /mcp
  step('terminateSession');
  obs.sessionAfterTerminate = transport.sessionId ?? null;
  await client.close();
  step('close');
  obs.ok = true;
} catch (e) {
  obs.error = String(e?.stack ?? e);
}
process.stdout.write(JSON.stringify(obs) + '\n');
process.exit(obs.ok ? 0 : 1);

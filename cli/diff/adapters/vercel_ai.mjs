// What the Vercel AI SDK hands a tool runner for streamed turns (`callgate diff`'s Node runner).
//
// How this works: `node vercel_ai.mjs ADAPTER [--node-modules DIR] [--probe]` resolves `ai` and
// the adapter's provider package as Node resolves a bare import from the current directory (or
// from DIR, a node_modules folder), so it runs the user's own installed releases. It reads one
// envelope per stdin line and prints one JSON line per envelope, `{"adapter", "version", "calls",
// "finish", "error"}`, as the Python runner does; when a package does not resolve it prints
// `{"missing": [...]}` and exits 3. `--probe` resolves and prints the versions, nothing more.
//
// Each envelope's stream is framed as the provider sends it and answered from the provider's
// `fetch` option as an in-memory `Response` (nothing reaches the network), in the pieces
// `split_events` asks for when it does. `streamText` declares the fixture's tools with
// `jsonSchema(...)` and no `execute`, so nothing runs; the `tool-call` parts of its `fullStream`
// that are not `invalid` (ai answers those with a `tool-error` part, never a tool run) are what a
// tool runner receives, their parsed `input` shown as `JSON.stringify` text. An `error` part is
// what the app sees instead of a turn.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const ADAPTERS = {
  "vercel-ai": {
    provider: "@ai-sdk/openai",
    // .chat: the Chat Completions API, whose streams the openai profile records.
    model: (library, fetch) =>
      library
        .createOpenAI({ apiKey: "callgate-diff", baseURL: "http://callgate.invalid/v1", fetch })
        .chat("callgate-diff"),
  },
  "vercel-ai-anthropic": {
    provider: "@ai-sdk/anthropic",
    model: (library, fetch) =>
      library.createAnthropic({
        apiKey: "callgate-diff",
        baseURL: "http://callgate.invalid/v1",
        fetch,
      })("callgate-diff"),
  },
};

function option(name) {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}

// The entry file and package.json of `name` as `import name` would find it from `base`'s folder.
function locate(name, base) {
  let entry;
  try {
    entry = createRequire(base).resolve(name);
  } catch {
    return undefined;
  }
  for (let folder = path.dirname(entry); folder !== path.dirname(folder); ) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8"));
      if (manifest.name === name) return { entry, version: manifest.version };
    } catch {
      // no package.json in this folder: look in its parent
    }
    folder = path.dirname(folder);
  }
  return undefined;
}

// The stream as `callgate serve` frames it: Anthropic's named events, or `data:` lines ending
// with `data: [DONE]` unless the recording had none.
function sseBody(envelope) {
  if ("events" in envelope) {
    return envelope.events
      .map((event) =>
        event !== null && typeof event === "object" && "type" in event
          ? `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`
          : `data: ${JSON.stringify(event)}\n\n`,
      )
      .join("");
  }
  const frames = envelope.chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`);
  const stream = envelope.meta?.stream;
  if (stream === null || typeof stream !== "object" || (stream.done ?? true)) {
    frames.push("data: [DONE]\n\n");
  }
  return frames.join("");
}

// The body in the byte counts `split_events` lists (in turn), else whole.
function pieces(envelope) {
  const body = new TextEncoder().encode(sseBody(envelope));
  const sizes = envelope.meta?.mutation?.pieces;
  if (!Array.isArray(sizes) || sizes.length === 0) return [body];
  const cut = [];
  for (let start = 0, n = 0; start < body.length; n += 1) {
    const end = start + sizes[n % sizes.length];
    cut.push(body.slice(start, end));
    start = end;
  }
  return cut;
}

function served(envelope) {
  return async () =>
    new Response(
      new ReadableStream({
        start(controller) {
          for (const piece of pieces(envelope)) controller.enqueue(piece);
          controller.close();
        },
      }),
      { status: 200, headers: { "content-type": "text/event-stream" } },
    );
}

// An error as the table names it: ai's errors by their name without its `AI_` prefix (their
// class names differ between builds), a value that is no Error (ai 6 hands on the provider's
// error object as it came) as a plain object.
function described(thrown) {
  if (thrown instanceof Error) {
    return { type: thrown.name.replace(/^AI_/, ""), message: thrown.message };
  }
  const type = typeof thrown === "object" ? "plain object" : typeof thrown;
  return { type, message: String(thrown?.message ?? JSON.stringify(thrown)) };
}

async function handOn(envelope, ai, model) {
  const tools = Object.fromEntries(
    Object.entries(envelope.tool_schemas ?? {}).map(([name, schema]) => [
      name,
      ai.tool({ inputSchema: ai.jsonSchema(schema) }),
    ]),
  );
  const result = ai.streamText({
    model: model(served(envelope)),
    prompt: "callgate diff",
    tools,
    maxRetries: 0,
    onError: () => {}, // the error part below is the finding; ai would also log it
  });
  const calls = [];
  let finish = null;
  let error = null;
  for await (const part of result.fullStream) {
    if (part.type === "tool-call" && !part.invalid) {
      const text = part.input === undefined ? null : JSON.stringify(part.input);
      calls.push({ id: part.toolCallId, name: part.toolName, arguments: text });
    } else if (part.type === "finish") {
      finish = part.finishReason ?? null;
    } else if (part.type === "error" && error === null) {
      error = described(part.error);
    }
  }
  return { calls, finish, error };
}

async function main() {
  const adapter = process.argv[2];
  const spec = ADAPTERS[adapter];
  const folder = option("--node-modules");
  const base = folder
    ? path.join(path.resolve(folder), "callgate-diff.mjs")
    : path.join(process.cwd(), "callgate-diff.mjs");
  const found = Object.fromEntries(["ai", spec.provider].map((name) => [name, locate(name, base)]));
  const missing = Object.keys(found).filter((name) => found[name] === undefined);
  if (missing.length > 0) {
    console.log(JSON.stringify({ missing }));
    return 3;
  }
  const version = `${found.ai.version} (${spec.provider} ${found[spec.provider].version})`;
  if (process.argv.includes("--probe")) {
    console.log(JSON.stringify({ version }));
    return 0;
  }
  // Results own stdout: a library's log lines go to stderr.
  const print = console.log.bind(console);
  console.log = console.info = console.warn = console.error;
  globalThis.AI_SDK_LOG_WARNINGS = false;
  const ai = await import(pathToFileURL(found.ai.entry).href);
  const provider = await import(pathToFileURL(found[spec.provider].entry).href);
  const model = (fetch) => spec.model(provider, fetch);
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (line.trim() === "") continue;
    const result = { adapter, version, calls: [], finish: null, error: null };
    try {
      Object.assign(result, await handOn(JSON.parse(line), ai, model));
    } catch (thrown) {
      result.error = described(thrown); // whatever ai throws is the finding
    }
    print(JSON.stringify(result));
  }
  return 0;
}

process.exitCode = await main();

// The README's quick start, as a TypeScript agent would write it: a client generated
// from openapi/openapi.json by openapi-typescript, typed by openapi-fetch, compiled
// with `tsc --strict` and run against a live daemon (argv[2] is its URL).
import createClient from "openapi-fetch";
import type { paths } from "./api.js";

const aster = createClient<paths>({ baseUrl: process.argv[2] });

function check(what: string, ok: boolean): void {
  if (!ok) throw new Error(`failed: ${what}`);
  console.log(`ok ${what}`);
}

const created = await aster.POST("/v1/sessions", {
  body: { repo_root: "/home/me/project", model: "gpt-4o" },
});
check("create", created.response.status === 201 && created.data !== undefined);
const sid: string = created.data!.id;
const params = { path: { session_id: sid } };

const one = await aster.POST("/v1/sessions/{session_id}/events", {
  params,
  body: { type: "message", role: "user", content: "read main.rs" },
});
check("append one event", one.response.status === 201 && one.data?.last_seq === 1);

const keyed = { path: { session_id: sid }, header: { "Idempotency-Key": "turn-1" } };
// the same turn twice: each call's body is checked against the document where it is written
const batch = await aster.POST("/v1/sessions/{session_id}/events", {
  params: keyed,
  body: [
    {
      type: "message",
      role: "assistant",
      tool_calls: [
        {
          id: "call_1",
          type: "function",
          function: { name: "read_file", arguments: '{"path": "main.rs"}' },
        },
      ],
    },
    { type: "message", role: "tool", tool_call_id: "call_1", content: "fn main() {}" },
    { type: "message", role: "assistant", content: "It is the entrypoint." },
  ],
});
check("append the tool-call turn", batch.response.status === 201 && batch.data?.last_seq === 4);

const again = await aster.POST("/v1/sessions/{session_id}/events", {
  params: keyed,
  body: [
    {
      type: "message",
      role: "assistant",
      tool_calls: [
        {
          id: "call_1",
          type: "function",
          function: { name: "read_file", arguments: '{"path": "main.rs"}' },
        },
      ],
    },
    { type: "message", role: "tool", tool_call_id: "call_1", content: "fn main() {}" },
    { type: "message", role: "assistant", content: "It is the entrypoint." },
  ],
});
check(
  "a retry with the same key is the first reply",
  again.response.status === 200 &&
    again.response.headers.get("Idempotent-Replayed") === "true" &&
    again.data?.first_seq === 2 &&
    again.data?.last_seq === 4,
);

const stale = await aster.POST("/v1/sessions/{session_id}/events", {
  params: { path: { session_id: sid }, header: { "If-Match": '"1"' } },
  body: { type: "message", role: "user", content: "too late" },
});
check(
  "a stale If-Match is 412",
  stale.response.status === 412 && stale.error?.code === "precondition_failed",
);

const listed = await aster.GET("/v1/sessions", {
  params: { query: { repo_root: "/home/me/project" } },
});
check("list", listed.data?.items.some((s) => s.id === sid) === true);

const history = await aster.GET("/v1/sessions/{session_id}/messages", { params });
check("messages for a UI", history.data?.messages.length === 2);
const context = await aster.GET("/v1/sessions/{session_id}/messages", {
  params: { path: { session_id: sid }, query: { view: "context" } },
});
check("what the model saw", context.data?.messages.length === 4);

const found = await aster.GET("/v1/search", { params: { query: { q: "entrypoint" } } });
check("search", found.data?.items.some((hit) => hit.session_id === sid) === true);

const remembered = await aster.POST("/v1/memory/blocks", {
  params: { query: { repo_root: "/home/me/project" } },
  body: { title: "Build", content: "Build with cargo build --release." },
});
check("remember", remembered.response.status === 201);
const name: string = remembered.data!.name;

const recalled = await aster.GET("/v1/memory/blocks/{name}", {
  params: { path: { name }, query: { repo_root: "/home/me/project" } },
});
check("recall", recalled.data?.body.includes("cargo build") === true);

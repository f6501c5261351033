// Drives an agentplane agent with the official A2A JavaScript SDK, unchanged: its v1.0 client
// with the v0.3 compatibility layer, since the agent speaks A2A 0.3 (a2a-go v0.3.3). Each phase
// prints what it saw as JSON for the Go test (api/a2a_node_test.go) to check.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { randomUUID } from "node:crypto";

const { AGENT_URL, KEY } = process.env;

// authed sends the account's API key with every request, the card's included.
const authed = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${KEY}`);
  return fetch(url, { ...init, headers });
};

const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: authed, legacyCompat: { enabled: true } })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed, legacyCompat: { enabled: true } }),
}));

const message = (text, { taskId = "", contextId = "" } = {}) => ({
  message: { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: text } }],
    contextId, taskId, extensions: [], referenceTaskIds: [], metadata: undefined },
  configuration: undefined, metadata: undefined, tenant: "",
});

const state = (s) => TaskState[s];
const text = (msg) => (msg?.parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");
const taskOf = (result) => (result?.payload?.$case === "task" ? result.payload.value : result);
const summary = (task) => ({ id: task.id, contextId: task.contextId, state: state(task.status?.state), status: text(task.status?.message),
  artifacts: (task.artifacts ?? []).map((a) => (a.parts ?? []).map((p) => p.content?.value).join("")) });

async function failure(fn) {
  try {
    await fn();
    return { failed: false };
  } catch (e) {
    return { failed: true, name: e.constructor?.name, message: String(e.message ?? e), code: e.code };
  }
}

const phases = {
  // The card fetched from the agent's URL, then a message sent and answered, then one more in
  // the same context.
  async send() {
    const client = await factory.createFromUrl(`${AGENT_URL}/.well-known/agent-card.json`, "");
    const card = await client.getAgentCard();
    const first = summary(taskOf(await client.sendMessage(message("When do you open?"))));
    const next = summary(taskOf(await client.sendMessage(message("And on Saturdays?", { contextId: first.contextId }))));
    const got = summary(await client.getTask({ id: first.id, tenant: "", historyLength: undefined }));
    const cancel = await failure(() => client.cancelTask({ id: first.id, tenant: "", metadata: undefined }));
    const missing = await failure(() => client.getTask({ id: "no-such-task", tenant: "", historyLength: undefined }));
    return { card: { name: card.name, streaming: card.capabilities?.streaming, skills: (card.skills ?? []).map((s) => s.name),
      urls: (card.supportedInterfaces ?? []).map((i) => i.url) }, first, next, got, cancel, missing };
  },
  // A message streamed: the kinds and states of its events in order; then the task, over,
  // resubscribed to.
  async stream() {
    const client = await factory.createFromUrl(`${AGENT_URL}/.well-known/agent-card.json`, "");
    const read = async (stream) => {
      const events = [];
      for await (const ev of stream) {
        const p = ev.payload;
        if (p?.$case === "task") events.push(`task:${state(p.value.status?.state)}`);
        else if (p?.$case === "statusUpdate") events.push(`status:${state(p.value.status?.state)}:${text(p.value.status?.message)}`);
        else if (p?.$case === "artifactUpdate") events.push(`artifact:${(p.value.artifact?.parts ?? []).map((x) => x.content?.value).join("")}`);
        else events.push(String(p?.$case));
        taskId ||= p?.value?.id ?? p?.value?.taskId;
      }
      return events;
    };
    let taskId = "";
    const events = await read(client.sendMessageStream(message("Stream me the hours.")));
    const resubscribed = await read(client.resubscribeTask({ id: taskId, tenant: "" }));
    return { events, resubscribed };
  },
  // A task that needs approval to run a tool, resumed with approve to completed; another one
  // resumed by a streamed approve.
  async approve() {
    const client = await factory.createFromUrl(`${AGENT_URL}/.well-known/agent-card.json`, "");
    const paused = summary(taskOf(await client.sendMessage(message("Add a deal for Acme."))));
    const resumed = summary(taskOf(await client.sendMessage(message("approve", { taskId: paused.id, contextId: paused.contextId }))));
    const again = await failure(() => client.sendMessage(message("approve", { taskId: paused.id })));
    const second = summary(taskOf(await client.sendMessage(message("Add another deal for Acme."))));
    const streamed = [];
    for await (const ev of client.sendMessageStream(message("approve", { taskId: second.id }))) {
      const p = ev.payload;
      if (p?.$case === "task") streamed.push(`task:${state(p.value.status?.state)}`);
      else if (p?.$case === "statusUpdate") streamed.push(`status:${state(p.value.status?.state)}:${text(p.value.status?.message)}`);
      else streamed.push(String(p?.$case));
    }
    return { paused, resumed, again, second, streamed };
  },
};

const phase = phases[process.argv[2]];
if (!phase) {
  console.error(`unknown phase ${process.argv[2]}`);
  process.exit(2);
}
process.stdout.write(JSON.stringify(await phase()));

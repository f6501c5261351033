// Drives an agentplane agent with the official A2A JavaScript SDK, unchanged: its A2A 1.0 client
// as it comes, and (phase legacy) its A2A 0.3 transport, for the agent speaks both. Each phase
// prints what it saw as JSON, with the JSON-RPC methods it called, for the Go test
// (api/a2a_test.go) to check.
import { Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { randomUUID } from "node:crypto";

const { AGENT_URL, KEY } = process.env;

// methods are the JSON-RPC methods called, in order, each with the A2A-Version header it carried.
const methods = [];

// authed sends the account's API key with every request, the card's included.
const authed = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${KEY}`);
  if (typeof init.body === "string") {
    methods.push(`${JSON.parse(init.body).method}@${headers.get("A2A-Version") ?? ""}`);
  }
  return fetch(url, { ...init, headers });
};

const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
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
      interfaces: (card.supportedInterfaces ?? []).map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`) },
      first, next, got, cancel, missing, methods };
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
    return { events, resubscribed, methods };
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
    return { paused, resumed, again, second, streamed, methods };
  },
  // A task waiting for a tool's approval canceled, then read; canceled again, it is over, and
  // an approval of it is refused.
  async cancel() {
    const client = await factory.createFromUrl(`${AGENT_URL}/.well-known/agent-card.json`, "");
    const paused = summary(taskOf(await client.sendMessage(message("Add a deal for Acme."))));
    const canceled = summary(await client.cancelTask({ id: paused.id, tenant: "", metadata: undefined }));
    const got = summary(await client.getTask({ id: paused.id, tenant: "", historyLength: undefined }));
    const again = await failure(() => client.cancelTask({ id: paused.id, tenant: "", metadata: undefined }));
    const decided = await failure(() => client.sendMessage(message("approve", { taskId: paused.id })));
    return { paused, canceled, got, again, decided, methods };
  },
  // A task started without waiting for it (returnImmediately).
  async start() {
    const client = await factory.createFromUrl(`${AGENT_URL}/.well-known/agent-card.json`, "");
    const request = message("What deals are there?");
    request.configuration = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };
    return { started: summary(taskOf(await client.sendMessage(request))), methods };
  },
  // The task TASK_ID canceled.
  async cancelTask() {
    const client = await factory.createFromUrl(`${AGENT_URL}/.well-known/agent-card.json`, "");
    return { canceled: summary(await client.cancelTask({ id: process.env.TASK_ID, tenant: "", metadata: undefined })), methods };
  },
  // The task TASK_ID followed to its end (resubscribed to): its events' states, in order.
  async follow() {
    const client = await factory.createFromUrl(`${AGENT_URL}/.well-known/agent-card.json`, "");
    const events = [];
    for await (const ev of client.resubscribeTask({ id: process.env.TASK_ID, tenant: "" })) {
      const p = ev.payload;
      if (p?.$case === "task") events.push(`task:${state(p.value.status?.state)}`);
      else if (p?.$case === "statusUpdate") events.push(`status:${state(p.value.status?.state)}`);
      else events.push(String(p?.$case));
    }
    return { events, methods };
  },
  // The agent at AGENT_URL reached with the key KEY: its card read and a message answered, or
  // how the SDK failed.
  async reach() {
    let reached;
    const failed = await failure(async () => {
      const client = await factory.createFromUrl(`${AGENT_URL}/.well-known/agent-card.json`, "");
      const card = await client.getAgentCard();
      reached = { schemes: Object.keys(card.securitySchemes ?? {}).sort(), answered: summary(taskOf(await client.sendMessage(message("When do you open?")))) };
    });
    return { reached, failed, methods };
  },
  // The same agent through the SDK's A2A 0.3 transport (message/send, ...), the card's 0.3
  // interface taken: a message sent and its task read, one streamed, an unknown task not found.
  async legacy() {
    const card = await new DefaultAgentCardResolver({ fetchImpl: authed }).resolve(`${AGENT_URL}/.well-known/agent-card.json`, "");
    const iface = card.supportedInterfaces.find((i) => i.protocolVersion === "0.3");
    const client = new Client(new LegacyJsonRpcTransport({ endpoint: iface.url, fetchImpl: authed }), card);
    const sent = summary(taskOf(await client.sendMessage(message("When do you open?"))));
    const got = summary(await client.getTask({ id: sent.id, tenant: "", historyLength: undefined }));
    const streamed = [];
    for await (const ev of client.sendMessageStream(message("Stream me the hours."))) {
      const p = ev.payload;
      if (p?.$case === "task") streamed.push(`task:${state(p.value.status?.state)}`);
      else if (p?.$case === "statusUpdate") streamed.push(`status:${state(p.value.status?.state)}:${text(p.value.status?.message)}`);
      else if (p?.$case === "artifactUpdate") streamed.push(`artifact:${(p.value.artifact?.parts ?? []).map((x) => x.content?.value).join("")}`);
      else streamed.push(String(p?.$case));
    }
    const missing = await failure(() => client.getTask({ id: "no-such-task", tenant: "", historyLength: undefined }));
    return { sent, got, streamed, missing, methods };
  },
};

const phase = phases[process.argv[2]];
if (!phase) {
  console.error(`unknown phase ${process.argv[2]}`);
  process.exit(2);
}
process.stdout.write(JSON.stringify(await phase()));

// Remote agents served by the official A2A JavaScript SDK, unchanged: its DefaultRequestHandler
// behind its Express JSON-RPC handler and card handler, with the v0.3 compatibility layer on.
// Each agent lives under /<name>; every request must carry the bearer token TOKEN. It prints
// {"url": ...} once it listens, for the Go test (api/a2a_tool_test.go) to read.
//   echo    A2A 1.0 and 0.3, streams: "remote says (hop <X-A2A-Hop>, A2A-Version <header>):
//           <text>" as an artifact, then completed
//   plain   A2A 0.3 only, does not stream: the same answer in the completed task's status message
//   silent  A2A 1.0 and 0.3, does not stream, and never answers (its task stays working until
//           canceled)
// GET /canceled answers {"canceled": [...]}: the ids of the tasks the agents were asked to cancel.
import express from "express";
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, TaskState, Role } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, STATE_HEADERS_KEY } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { randomUUID } from "node:crypto";

const { TOKEN } = process.env;

const app = express();
app.use((req, res, next) => {
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    res.status(401).json({ error: "a bearer token is required" });
    return;
  }
  next();
});

const textPart = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" });
const agentMessage = (taskId, contextId, value) => ({
  role: Role.ROLE_AGENT, messageId: randomUUID(), parts: [textPart(value)], taskId, contextId, extensions: [], metadata: {}, referenceTaskIds: [],
});
const status = (taskId, contextId, state, message) => AgentEvent.statusUpdate({
  taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined,
});

// canceled are the ids of the tasks a cancel was asked for, in order; contexts the context of
// each task.
const canceled = [];
const contexts = new Map();
app.get("/canceled", (req, res) => res.json({ canceled }));

// executor answers as the agent name does; a task canceled ends so.
const executor = (name) => ({
  cancelTask: async (taskId, bus) => {
    canceled.push(taskId);
    bus.publish(status(taskId, contexts.get(taskId) ?? "", TaskState.TASK_STATE_CANCELED, undefined));
  },
  execute: async (ctx, bus) => {
    const { taskId, contextId, userMessage } = ctx;
    contexts.set(taskId, contextId);
    const headers = ctx.context.state.get(STATE_HEADERS_KEY) ?? {};
    const asked = userMessage.parts.filter((p) => p.content?.$case === "text").map((p) => p.content.value).join(" ");
    const answer = `remote says (hop ${headers["x-a2a-hop"] ?? "none"}, A2A-Version ${headers["a2a-version"] ?? "none"}): ${asked}`;
    if (!ctx.task) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString() },
        artifacts: [], history: [userMessage], metadata: undefined }));
    }
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING, undefined));
    if (name === "silent") {
      await new Promise(() => {});
    }
    if (name === "echo") {
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: randomUUID(), name: "answer", description: "", parts: [textPart(answer)], metadata: undefined, extensions: [] } }));
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, undefined));
    } else {
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, agentMessage(taskId, contextId, answer)));
    }
  },
});

const server = app.listen(0, "127.0.0.1", () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  for (const name of ["echo", "plain", "silent"]) {
    const card = {
      name: `Remote ${name}`,
      description: `A remote agent (${name}) of the JavaScript SDK.`,
      // The same endpoint for 1.0 and 0.3 clients: the compatibility layer serves 0.3 only where
      // an interface says so. plain is an agent of 0.3 only.
      supportedInterfaces: (name === "plain" ? ["0.3"] : [A2A_PROTOCOL_VERSION, "0.3"]).map((protocolVersion) => ({ url: `${base}/${name}/rpc`, protocolBinding: "JSONRPC",
        tenant: "", protocolVersion })),
      version: "1.0.0",
      capabilities: { streaming: name === "echo", pushNotifications: false, extensions: [], extendedAgentCard: false },
      securitySchemes: {}, securityRequirements: [],
      defaultInputModes: ["text"], defaultOutputModes: ["text"],
      skills: [{ id: "echo", name: "Echo", description: "Says back what it is told.", tags: ["echo"], examples: [], inputModes: [], outputModes: [],
        securityRequirements: [] }],
      documentationUrl: "", signatures: [],
    };
    const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor(name));
    app.use(`/${name}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
    app.use(`/${name}/rpc`, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  }
  process.stdout.write(JSON.stringify({ url: base }) + "\n");
});

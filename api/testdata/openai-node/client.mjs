// OpenAI's official Node client, unchanged, against agentplane: one phase per run (chat,
// approve, errors), its findings printed as JSON for the Go test that runs it.
import OpenAI from 'openai';

const { BASE_URL, KEY, MODEL, LIMITED_MODEL } = process.env;
const client = new OpenAI({ baseURL: BASE_URL, apiKey: KEY, maxRetries: 0 });

async function failure(call) {
  try {
    await call();
    return { status: 0 };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) throw e;
    return { status: e.status, code: e.code, type: e.type, param: e.param ?? '', message: e.message };
  }
}

const phases = {
  async chat() {
    const models = (await client.models.list()).data.map((m) => m.id);
    const created = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'When do you open?' }],
    });
    const chatID = created.agentplane.chat_id;
    const stream = await client.chat.completions.create({
      model: MODEL, stream: true, stream_options: { include_usage: true }, metadata: { chat_id: chatID },
      messages: [{ role: 'user', content: 'Saturdays too?' }],
    });
    let text = '', finish = null, total = 0, chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.usage) total = chunk.usage.total_tokens;
      for (const c of chunk.choices) {
        text += c.delta?.content ?? '';
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    const first = await client.responses.create({ model: MODEL, input: 'And on Sundays?', previous_response_id: undefined });
    const next = await client.responses.create({ model: MODEL, input: 'Thanks!', previous_response_id: first.id });
    const events = [];
    const rs = await client.responses.create({ model: MODEL, input: 'Bye', previous_response_id: next.id, stream: true });
    let streamed = '';
    for await (const ev of rs) {
      events.push(ev.type);
      if (ev.type === 'response.output_text.delta') streamed += ev.delta;
    }
    return {
      models, chatID,
      created: { content: created.choices[0].message.content, finish: created.choices[0].finish_reason },
      stream: { text, finish, total, chunks },
      responses: { first: first.output_text, next: next.output_text, sameChat: next.agentplane.chat_id === first.agentplane.chat_id,
        streamed, events, responsesChat: first.agentplane.chat_id },
    };
  },

  async approve() {
    const ask = [{ role: 'user', content: 'Add a deal for Acme to the CRM' }];
    const paused = await client.chat.completions.create({ model: MODEL, messages: ask, reasoning_effort: 'high' });
    const msg = paused.choices[0].message;
    const call = msg.tool_calls[0];
    const done = await client.chat.completions.create({
      model: MODEL, reasoning_effort: 'high',
      messages: [...ask, msg, { role: 'tool', tool_call_id: call.id, content: 'approve' }],
    });
    return { finish: paused.choices[0].finish_reason, tool: call.function.name, args: JSON.parse(call.function.arguments),
      reply: done.choices[0].message.content, doneFinish: done.choices[0].finish_reason };
  },

  async errors() {
    const hi = [{ role: 'user', content: 'Hi' }];
    const badKey = new OpenAI({ baseURL: BASE_URL, apiKey: 'ap_not-a-key', maxRetries: 0 });
    await client.chat.completions.create({ model: LIMITED_MODEL, messages: hi });
    return {
      badKey: await failure(() => badKey.chat.completions.create({ model: MODEL, messages: hi })),
      unknown: await failure(() => client.chat.completions.create({ model: 'agent:no-such-agent', messages: hi })),
      noUser: await failure(() => client.chat.completions.create({ model: MODEL, messages: [{ role: 'system', content: 'Be brief.' }] })),
      limited: await failure(() => client.chat.completions.create({ model: LIMITED_MODEL, messages: hi })),
    };
  },
};

const phase = process.argv[2];
console.log(JSON.stringify(await phases[phase]()));

// The hosted chat page: an end user's session (the subscriber id kept in this browser), a
// conversation streamed token by token, kept across reloads. No API key is ever here: the page
// speaks to the public endpoints with a session token scoped to this agent.
(() => {
  // A site the agent does not allow gets a notice, and its widget the origin to allow.
  const refused = document.body.dataset.refused;
  if (refused) {
    const text = `agentplane: add ${refused} to the agent's allowed_origins (PUT /v1/bot/update) to show it on this site`;
    return window.parent.postMessage({ type: 'agentplane:refused', text }, '*');
  }
  const subdomain = document.body.dataset.subdomain;
  const log = document.getElementById('log');
  const form = document.getElementById('ask');
  const input = document.getElementById('message');
  const storeKey = 'agentplane:' + subdomain;
  let state = {};
  try { state = JSON.parse(localStorage.getItem(storeKey) || '{}'); } catch (_) { state = {}; }
  let session = null;
  // sso is the sign-in token the site that sent the user here put in the fragment (#sso=...):
  // read once, then taken out of the address bar.
  const sso = new URLSearchParams(location.hash.slice(1)).get('sso') || '';
  if (sso) history.replaceState(null, '', location.pathname + location.search);
  // parentOrigin is the page that embeds this one (the widget's), when the agent allows it.
  const parentOrigin = document.body.dataset.parentOrigin || '';
  const toParent = (msg) => {
    if (parentOrigin && window.parent !== window) window.parent.postMessage(msg, parentOrigin);
  };

  const save = () => localStorage.setItem(storeKey, JSON.stringify(state));

  async function problem(res) {
    try {
      const body = await res.json();
      return new Error(body.message || 'Something went wrong; try again.');
    } catch (_) {
      return new Error('Something went wrong; try again.');
    }
  }

  async function token() {
    if (session && Date.parse(session.expires_at) - Date.now() > 60000) return session.token;
    const open = () => fetch('/public/v1/session', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ subdomain, subscriber_id: state.subscriber_id || '', sso_token: sso }),
    });
    let res = await open();
    if (res.status === 401 && state.subscriber_id && !sso) {
      // The id kept here signed in, and only its sign-in opens it again: go on as a new visitor.
      state = {};
      res = await open();
    }
    if (!res.ok) throw await problem(res);
    session = await res.json();
    state.subscriber_id = session.subscriber_id;
    save();
    return session.token;
  }

  function bubble(role) {
    const el = document.createElement('div');
    el.className = 'msg ' + role;
    log.appendChild(el);
    el.scrollIntoView({ block: 'end' });
    return el;
  }

  function sources(el, list) {
    if (!list || !list.length) return;
    const ol = document.createElement('ol');
    ol.className = 'sources';
    ol.setAttribute('aria-label', 'Sources');
    for (const s of list) {
      const li = document.createElement('li');
      const title = s.title || s.url || 'Source';
      if (/^https?:\/\//i.test(s.url || '')) {
        const a = document.createElement('a');
        a.href = s.url; a.textContent = title; a.target = '_blank'; a.rel = 'noopener';
        li.appendChild(a);
      } else {
        li.textContent = title;
      }
      ol.appendChild(li);
    }
    el.appendChild(ol);
  }

  function agentReply(el, reply) {
    el.innerHTML = reply.html;
    sources(el, reply.sources);
    if (reply.execution_id) approval(el, reply.execution_id);
  }

  // approval asks the end user to approve or reject the action the agent's run waits for.
  function approval(el, executionID) {
    const box = document.createElement('div');
    box.className = 'approval';
    box.dataset.execution = executionID;
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', 'Approve the action?');
    for (const [label, approve] of [['Approve', true], ['Reject', false]]) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.dataset.decision = approve ? 'approve' : 'reject';
      if (!approve) b.className = 'secondary';
      b.addEventListener('click', () => {
        box.remove();
        ask({ execution_id: executionID, approve });
      });
      box.appendChild(b);
    }
    el.appendChild(box);
  }

  function parse(block) {
    let event = 'message';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    return data ? { event, data: JSON.parse(data) } : null;
  }

  function send(text) {
    bubble('user').textContent = text;
    input.value = '';
    return ask({ message: text, chat_id: state.chat_id || '' });
  }

  // read calls on with each event the stream res brings, until it ends.
  async function read(res, on) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const ev = parse(buffered.slice(0, end));
        buffered = buffered.slice(end + 2);
        if (ev) on(ev);
      }
    }
  }

  // ask sends a turn (a message, or a decision) and streams the agent's answer into a new bubble.
  async function ask(body) {
    const el = bubble('agent');
    el.dataset.deltas = '0';
    el.setAttribute('aria-busy', 'true');
    let streamed = '';
    try {
      const res = await fetch('/public/v1/chat', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + await token() },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw await problem(res);
      await read(res, (ev) => {
        if (ev.event === 'delta') {
          streamed += ev.data.content;
          el.textContent = streamed;
          el.dataset.deltas = String(Number(el.dataset.deltas) + 1);
        } else if (ev.event === 'done') {
          state.chat_id = ev.data.chat_id;
          save();
          shown.add(ev.data.message_id);
          if (ev.data.human && !ev.data.text) el.remove();
          else agentReply(el, ev.data);
          if (ev.data.human) watch();
          else if (watching) watching.abort(), watching = null;
          toParent({ type: 'agentplane:message', role: 'agent', text: ev.data.text });
        } else if (ev.event === 'error') {
          throw new Error(ev.data.message);
        }
      });
    } catch (e) {
      el.remove();
      bubble('error').textContent = e.message;
    } finally {
      el.removeAttribute('aria-busy');
    }
  }

  // shown are the messages on the page, by id: each shows once, however it came.
  const shown = new Set();
  function show(m) {
    if (m.role === 'user' || !m.content || shown.has(m.id)) return;
    shown.add(m.id);
    agentReply(bubble('agent'), m);
  }

  const chatHistory = async () => {
    const res = await fetch('/public/v1/history?chat_id=' + encodeURIComponent(state.chat_id), {
      headers: { Authorization: 'Bearer ' + await token() },
    });
    if (res.ok) return res.json();
    throw res.status === 404 ? res : await problem(res);
  };

  // watch shows what a person of the team writes in this chat as they write it, from when the
  // agent handed the chat to them until it answers again (an interrupted stream opens again).
  let watching = null;
  async function watch() {
    if (watching) return;
    const ctl = watching = new AbortController();
    while (watching === ctl) {
      try {
        const res = await fetch('/public/v1/stream?chat_id=' + encodeURIComponent(state.chat_id), {
          headers: { Authorization: 'Bearer ' + await token() }, signal: ctl.signal,
        });
        if (res.status < 500 && !res.ok) break;
        // On ready (and when a message was too long for its event) the history has what the
        // stream did not bring.
        await read(res, (ev) => {
          if (ev.event !== 'message') chatHistory().then((c) => c.messages.forEach(show), () => {});
          else if (!shown.has(ev.data.id)) {
            show(ev.data);
            toParent({ type: 'agentplane:message', role: 'agent', text: ev.data.content });
          }
        });
      } catch (_) { /* opened again below */ }
      await new Promise((r) => setTimeout(r, 3000));
    }
    if (watching === ctl) watching = null;
  }

  async function restore() {
    if (!state.chat_id) return;
    try {
      const chat = await chatHistory();
      for (const m of chat.messages) {
        if (m.role === 'user') bubble('user').textContent = m.content;
        else show(m);
      }
      if (chat.human) watch();
    } catch (e) {
      if (e.status !== 404) bubble('error').textContent = e.message;
      else delete state.chat_id, save();
    }
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (text) send(text);
  });
  for (const b of document.querySelectorAll('[data-prompt]')) b.addEventListener('click', () => send(b.dataset.prompt));
  document.getElementById('new-chat').addEventListener('click', () => {
    delete state.chat_id;
    save();
    for (const el of log.querySelectorAll('.msg:not(.greeting)')) el.remove();
  });
  window.addEventListener('message', (e) => {
    if (!parentOrigin || e.origin !== parentOrigin || e.source !== window.parent) return;
    const d = e.data || {};
    if (d.type === 'agentplane:send' && typeof d.text === 'string' && d.text.trim()) send(d.text.trim());
  });
  if (document.body.dataset.requireLogin && !sso) {
    bubble('error').textContent = 'This agent requires sign-in: open it from the site that signs you in.';
    input.disabled = true;
  }
  restore().finally(() => {
    document.body.setAttribute('data-ready', 'true');
    toParent({ type: 'agentplane:ready' });
  });
})();

// The operators' inbox: sign in with an operator's token (kept in this tab's sessionStorage),
// the project's queue of chats waiting for a person, and one chat at a time to take over, answer,
// annotate, hand back or close. Both are read again every 2 seconds. Everything an end user, an
// operator or a model wrote is shown as text (textContent), never as HTML.
(() => {
  const every = 2000;
  const $ = (id) => document.getElementById(id);
  const errorBox = $('error');
  let me = null;
  let projectID = '';
  let open = null; // the chat shown: {bot_id, chat_id}
  let handoff = null; // its handoff, as last read
  let queueKey = '';
  let chatKey = '';
  let timer = 0;

  const token = () => sessionStorage.getItem('agentplane:operator') || '';

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  }

  // call speaks to the API with the operator's token; a refusal throws the API's message.
  async function call(method, path, body) {
    const res = await fetch(path, {
      method,
      headers: Object.assign({ Authorization: 'Bearer ' + token() }, body ? { 'Content-Type': 'application/json' } : {}),
      body: body ? JSON.stringify(body) : undefined,
      cache: 'no-store',
    });
    let data = null;
    try { data = await res.json(); } catch (_) { data = null; }
    if (!res.ok) {
      const message = (data && data.error && data.error.message) || (data && data.message) || 'The request failed (' + res.status + ').';
      const err = new Error(message);
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (className) e.className = className;
    return e;
  }

  function age(since) {
    const s = Math.max(0, Math.round((Date.now() - Date.parse(since)) / 1000));
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min';
    if (s < 86400) return Math.floor(s / 3600) + ' h';
    return Math.floor(s / 86400) + ' d';
  }

  const operatorOf = (id) => (!id ? '' : id === me.id ? 'you' : id);
  // authorOf is who wrote a note: the operator's id, or account (the account's API key).
  const authorOf = (by) => (by === me.id ? me.name + ' (you)' : by === 'account' ? 'The account' : 'Operator ' + by);

  async function signIn(t) {
    sessionStorage.setItem('agentplane:operator', t);
    try {
      me = (await call('GET', '/v1/bot/operator/me')).operator;
    } catch (err) {
      sessionStorage.removeItem('agentplane:operator');
      showError(err.message);
      return;
    }
    showError('');
    $('who').textContent = 'Signed in as ' + me.name;
    const select = $('project');
    select.replaceChildren(...me.project_ids.map((id) => el('option', id)));
    $('project-box').hidden = me.project_ids.length < 2;
    projectID = me.project_ids[0] || '';
    $('signin').hidden = true;
    $('sign-out').hidden = false;
    $('workspace').hidden = false;
    tick();
  }

  function signOut() {
    clearTimeout(timer);
    sessionStorage.removeItem('agentplane:operator');
    me = null; open = null; queueKey = ''; chatKey = '';
    $('queue-rows').replaceChildren();
    $('who').textContent = '';
    $('workspace').hidden = true;
    $('conversation').hidden = true;
    $('project-box').hidden = true;
    $('sign-out').hidden = true;
    $('signin').hidden = false;
    $('token').value = '';
    $('token').focus();
  }

  // tick reads the queue and the open chat, then again in 2 seconds. A tick asked for while one
  // runs runs once more after it, and answers when the page shows the latest state.
  let running = null;
  let again = false;
  let readFailed = false; // the error shown is a read's, which the next read that works clears
  function tick() {
    clearTimeout(timer);
    if (!me) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await Promise.all([loadQueue(), open ? loadChat() : null]);
          if (readFailed) showError('');
          readFailed = false;
        } catch (err) {
          if (err.status === 401) signOut();
          showError(err.message);
          readFailed = true;
        }
      } while (again && me);
      running = null;
      if (me) timer = setTimeout(tick, every);
    })();
    return running;
  }

  async function loadQueue() {
    const list = (await call('GET', '/v1/bot/inbox?per_page=100&project_id=' + encodeURIComponent(projectID))).handoffs || [];
    const key = JSON.stringify(list.map((h) => [h.bot_id, h.chat_id, h.source, h.reason, h.urgency, h.status, h.operator_id]));
    $('queue-empty').hidden = list.length > 0;
    if (key !== queueKey) {
      queueKey = key;
      const focused = document.activeElement && document.activeElement.closest('#queue-rows tr');
      const refocus = focused ? focused.dataset.chat : '';
      $('queue-rows').replaceChildren(...list.map(row));
      if (refocus) {
        const again = $('queue-rows').querySelector(`tr[data-chat="${CSS.escape(refocus)}"] button`);
        if (again) again.focus();
      }
    }
    for (const tr of $('queue-rows').children) tr.querySelector('.age').textContent = age(tr.dataset.since);
  }

  function row(h) {
    const tr = el('tr');
    tr.dataset.chat = h.chat_id;
    tr.dataset.bot = h.bot_id;
    tr.dataset.status = h.status;
    tr.dataset.since = h.requested_at;
    if (open && open.chat_id === h.chat_id) tr.setAttribute('aria-current', 'true');
    const first = el('td');
    const button = el('button', h.bot_id, 'link');
    button.type = 'button';
    button.setAttribute('aria-label', 'Open the chat of agent ' + h.bot_id + ' (' + h.status + ')');
    first.appendChild(button);
    tr.appendChild(first);
    for (const [text, cls] of [[h.source], [h.reason, 'reason'], [h.urgency, 'urgency-' + h.urgency], [h.status, 'status'], [operatorOf(h.operator_id)], ['', 'age']]) {
      tr.appendChild(el('td', text, cls));
    }
    tr.addEventListener('click', () => openChat(h.bot_id, h.chat_id));
    return tr;
  }

  function openChat(botID, chatID) {
    open = { bot_id: botID, chat_id: chatID, page: 1 };
    chatKey = '';
    handoff = null;
    for (const tr of $('queue-rows').children) {
      if (tr.dataset.chat === chatID) tr.setAttribute('aria-current', 'true'); else tr.removeAttribute('aria-current');
    }
    $('messages').replaceChildren();
    $('notes').replaceChildren();
    $('chat-meta').replaceChildren();
    $('conversation').hidden = false;
    $('chat-title').focus();
    tick();
  }

  function closeChat() {
    const chatID = open ? open.chat_id : '';
    open = null;
    $('conversation').hidden = true;
    for (const tr of $('queue-rows').children) tr.removeAttribute('aria-current');
    const button = chatID && $('queue-rows').querySelector(`tr[data-chat="${CSS.escape(chatID)}"] button`);
    if (button) button.focus();
  }

  async function loadChat() {
    const shown = open;
    const read = (page) => call('GET', '/v1/bot/inbox/read?per_page=100&page=' + page + '&project_id=' + encodeURIComponent(projectID) +
      '&bot_id=' + encodeURIComponent(shown.bot_id) + '&chat_id=' + encodeURIComponent(shown.chat_id));
    let data = await read(shown.page);
    const pages = data.pagination ? data.pagination.total_pages : 1;
    if (pages > shown.page) {
      // The latest messages matter most: show the last page.
      shown.page = pages;
      data = await read(pages);
    }
    if (open !== shown) return;
    handoff = data.handoff;
    const earlier = (shown.page - 1) * 100;
    $('earlier').hidden = earlier === 0;
    $('earlier').textContent = earlier + ' earlier messages are not shown.';
    const messages = data.conversation || [];
    const notes = (handoff && handoff.notes) || [];
    const key = JSON.stringify([messages.map((m) => [m.uuid, m.content]), notes.map((n) => [n.at, n.text]), handoff]);
    if (key === chatKey) return;
    chatKey = key;
    renderMeta();
    $('messages').replaceChildren(...messages.map((m) => {
      const li = el('li', undefined, 'msg ' + (m.role === 'user' ? 'user' : 'agent'));
      const who = (m.user && m.user.name) || (m.role === 'user' ? 'End user' : 'Agent');
      li.appendChild(el('span', who, 'author'));
      li.appendChild(el('p', m.content, 'text'));
      return li;
    }));
    $('notes').replaceChildren(...notes.map((n) => {
      const li = el('li');
      li.appendChild(el('span', authorOf(n.by), 'author'));
      li.appendChild(el('p', n.text, 'text'));
      return li;
    }));
    const mine = handoff && handoff.status === 'taken' && handoff.operator_id === me.id;
    const isOpen = handoff && ['waiting', 'assigned', 'taken'].includes(handoff.status);
    $('take').disabled = mine || (handoff && handoff.status === 'taken');
    $('close').disabled = !isOpen;
    $('reply-form').querySelector('button').disabled = !mine;
    $('release-form').querySelector('button').disabled = !mine;
    $('note-form').querySelector('button').disabled = !handoff;
  }

  function renderMeta() {
    const h = handoff;
    const items = h
      ? [['Agent', h.bot_id], ['Chat', h.chat_id], ['Status', h.status], ['Source', h.source], ['Reason', h.reason],
          ['Urgency', h.urgency], ['Channel', h.channel], ['Operator', operatorOf(h.operator_id) || 'nobody']]
      : [['Agent', open.bot_id], ['Chat', open.chat_id], ['Status', 'nobody asked for a person']];
    $('chat-meta').replaceChildren(...items.flatMap(([term, value]) => [el('dt', term), el('dd', value, term === 'Status' ? 'status' : '')]));
  }

  // act posts an inbox action on the open chat, then reads it again.
  async function act(action, extra, button) {
    if (!open) return false;
    if (button) button.disabled = true;
    try {
      await call('POST', '/v1/bot/inbox/' + action, Object.assign({ project_id: projectID, bot_id: open.bot_id, chat_id: open.chat_id }, extra));
      showError('');
      chatKey = '';
      await tick();
      return true;
    } catch (err) {
      showError(err.message);
      if (button) button.disabled = false;
      return false;
    }
  }

  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('token').value.trim();
    $('token').value = '';
    if (t) signIn(t);
  });
  $('sign-out').addEventListener('click', signOut);
  $('project').addEventListener('change', () => {
    projectID = $('project').value;
    queueKey = '';
    closeChat();
    tick();
  });
  $('take').addEventListener('click', () => act('take', {}, $('take')));
  $('close').addEventListener('click', () => act('close', {}, $('close')));
  $('back').addEventListener('click', closeChat);
  const submit = (form, action, field, input) => $(form).addEventListener('submit', async (e) => {
    e.preventDefault();
    const value = $(input).value;
    if (await act(action, { [field]: value }, e.submitter)) $(input).value = '';
  });
  submit('reply-form', 'reply', 'content', 'reply');
  submit('note-form', 'note', 'content', 'note');
  submit('release-form', 'release', 'note', 'release-note');
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && open) closeChat();
  });

  if (token()) signIn(token()); else $('token').focus();
})();

// agentplane's widget: one script tag adds a launcher and a chat panel to any page.
//   <script src="https://agents.example.com/widget.js" data-bot="SUBDOMAIN" async></script>
// Options (data-*): position (right, left), auto-open, greeting (a bubble by the launcher).
// The panel is the agent's hosted page in an iframe, loaded on first open; the launcher lives in
// a shadow root, so the host page's CSS reaches neither. window.agentplane: open, close, toggle,
// hide, show, destroy, send(text), identify(ssoToken), on/off(event, fn) for ready, open, close, message; the
// window event "agentplane:ready" says when it is there.
(() => {
  const script = document.currentScript;
  const bot = script && script.dataset.bot;
  if (!bot || window.agentplane) return;
  const base = new URL(script.src).origin;
  const left = script.dataset.position === 'left';
  const greeting = script.dataset.greeting || '';
  // sso signs the user in (data-sso-token, or identify(token)): it reaches the panel in the
  // fragment of its address, which no server sees.
  let sso = script.dataset.ssoToken || '';
  const listeners = {};
  const emit = (name, detail) => {
    for (const fn of (listeners[name] || []).slice()) {
      try { fn(detail); } catch (e) { console.error(e); }
    }
  };

  const host = document.createElement('agentplane-widget');
  host.style.setProperty('display', 'block', 'important');
  const root = host.attachShadow({ mode: 'open' });
  const side = left ? 'left' : 'right';
  root.innerHTML = `<style>
:host { all: initial; }
* { box-sizing: border-box; font: 15px/1.4 system-ui, sans-serif; }
.launcher { position: fixed; bottom: 20px; ${side}: 20px; width: 56px; height: 56px; border-radius: 50%; border: 0;
  background: #2563eb; color: #fff; cursor: pointer; box-shadow: 0 4px 14px rgba(0,0,0,.25); z-index: 2147483000; }
.launcher:focus-visible { outline: 3px solid #111827; outline-offset: 3px; }
.launcher svg { width: 26px; height: 26px; fill: currentColor; }
.panel { position: fixed; bottom: 88px; ${side}: 20px; width: min(400px, calc(100vw - 40px)); height: min(640px, calc(100vh - 120px));
  border-radius: 14px; overflow: hidden; box-shadow: 0 8px 30px rgba(0,0,0,.3); background: #fff; z-index: 2147483000; }
.panel[hidden], .bubble[hidden] { display: none; }
.panel iframe { border: 0; width: 100%; height: 100%; }
.bubble { position: fixed; bottom: 88px; ${side}: 20px; max-width: 260px; padding: 10px 14px; border-radius: 12px; background: #fff;
  color: #111827; box-shadow: 0 4px 14px rgba(0,0,0,.2); z-index: 2147483000; cursor: pointer; }
@media (max-width: 480px) { .panel { ${side}: 0; bottom: 0; width: 100vw; height: 100vh; border-radius: 0; } }
</style><div class="bubble" hidden></div><div class="panel" hidden></div><button class="launcher" type="button" aria-label="Open chat" aria-expanded="false">
<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"/></svg></button>`;
  const launcher = root.querySelector('.launcher');
  const panel = root.querySelector('.panel');
  const bubble = root.querySelector('.bubble');
  let frame = null;
  let frameReady = false;
  let opened = false;
  const pending = [];

  const post = (msg) => frame.contentWindow.postMessage(msg, base);
  function onMessage(e) {
    if (!frame || e.origin !== base || e.source !== frame.contentWindow) return;
    const d = e.data || {};
    if (d.type === 'agentplane:ready') {
      frameReady = true;
      pending.splice(0).forEach(post);
    } else if (d.type === 'agentplane:message') {
      emit('message', { role: d.role, text: d.text });
    } else if (d.type === 'agentplane:refused') {
      console.warn(d.text);
    }
  }
  window.addEventListener('message', onMessage);

  const api = {
    open() {
      if (!frame) {
        frame = document.createElement('iframe');
        frame.title = 'Chat';
        frame.src = `${base}/a/${encodeURIComponent(bot)}?embed=1&origin=${encodeURIComponent(location.origin)}` +
          (sso ? '#sso=' + encodeURIComponent(sso) : '');
        panel.appendChild(frame);
      }
      bubble.hidden = true;
      panel.hidden = false;
      launcher.setAttribute('aria-expanded', 'true');
      launcher.setAttribute('aria-label', 'Close chat');
      if (!opened) emit('open');
      opened = true;
    },
    close() {
      panel.hidden = true;
      launcher.setAttribute('aria-expanded', 'false');
      launcher.setAttribute('aria-label', 'Open chat');
      if (opened) emit('close');
      opened = false;
    },
    toggle() { if (opened) api.close(); else api.open(); },
    hide() { host.style.setProperty('display', 'none', 'important'); },
    show() { host.style.setProperty('display', 'block', 'important'); },
    destroy() {
      window.removeEventListener('message', onMessage);
      host.remove();
      delete window.agentplane;
    },
    send(text) {
      api.open();
      const msg = { type: 'agentplane:send', text: String(text) };
      if (frameReady) post(msg); else pending.push(msg);
    },
    identify(token) {
      sso = String(token || '');
      if (frame) {
        frame.remove();
        frame = null;
        frameReady = false;
        if (opened) {
          opened = false;
          api.open();
        }
      }
    },
    on(name, fn) {
      (listeners[name] = listeners[name] || []).push(fn);
      if (name === 'ready') fn();
      return api;
    },
    off(name, fn) {
      listeners[name] = (listeners[name] || []).filter((f) => f !== fn);
      return api;
    },
  };
  launcher.addEventListener('click', api.toggle);
  bubble.addEventListener('click', api.open);
  if (greeting) {
    bubble.textContent = greeting;
    bubble.hidden = false;
  }
  const mount = () => {
    document.body.appendChild(host);
    window.agentplane = api;
    if (script.dataset.autoOpen !== undefined) api.open();
    window.dispatchEvent(new Event('agentplane:ready'));
  };
  if (document.body) mount(); else document.addEventListener('DOMContentLoaded', mount);
})();

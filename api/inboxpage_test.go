package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// The operators' page, in a real browser over the real server: an end user asks for a person;
// the operator signs in with their token (a wrong one is refused with the API's message), sees
// the request in the queue, opens the chat (HTML the end user wrote shows as text and never
// runs), takes it over and replies; the reply is in the chat's history, the end user's next
// message reaches no model and shows on the page by itself; a note stays on the handoff; handed
// back with a note, the agent answers again with the note in its prompt.
func TestInboxPage(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true})
	fake.Set(providertest.Behavior{Reply: "The agent answers."})
	hostile := `Can I talk to a human? <img src=x onerror="window.pwned=1">`
	_, chat := a.chat(t, map[string]any{"message": hostile})
	if chat == nil || len(fake.Requests()) != 0 {
		t.Fatalf("asking for a person: %v after %d model calls", chat, len(fake.Requests()))
	}
	chatID := chat["chat_id"].(string)
	opID, token := a.operator(t, "Maria")
	botID := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)["id"].(string)

	res, err := http.Get(b.client.URL + "/inbox")
	if err != nil {
		t.Fatal(err)
	}
	source, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	csp := res.Header.Get("Content-Security-Policy")
	if res.StatusCode != http.StatusOK || !strings.Contains(string(source), `<form id="signin-form">`) ||
		!strings.Contains(csp, "script-src 'self';") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("the page: %d %q\n%s", res.StatusCode, csp, source)
	}

	run := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string { return get(t, ctx, chromedp.Text(sel)) }
	eval := func(js string) string { return get(t, ctx, chromedp.Evaluate[string](js)) }
	until := func(js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js)); err != nil {
			t.Fatalf("waiting for %s: %v", js, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name), get(t, ctx, chromedp.FullScreenshot(100)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	row := `#queue-rows tr[data-chat="` + chatID + `"]`

	run(chromedp.Navigate(b.client.URL+"/inbox"), chromedp.WaitVisible(`#token`),
		chromedp.SendKeys(`#token`, "op_"+strings.Repeat("A", 43)), chromedp.Click(`#signin-form button`), chromedp.WaitVisible(`#error`))
	if refused := text(`#error`); refused != "The operator token is not valid." || eval(`String(sessionStorage.length)`) != "0" {
		t.Fatalf("a wrong token: %q", refused)
	}

	run(chromedp.SendKeys(`#token`, token), chromedp.Click(`#signin-form button`), chromedp.WaitVisible(row))
	cells := get(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelector('`+row+`').cells].map((c) => c.textContent)`))
	if len(cells) != 7 || cells[0] != botID || cells[1] != "user" || cells[3] != "normal" || cells[4] != "waiting" || cells[5] != "" ||
		!strings.HasSuffix(cells[6], " s") {
		t.Fatalf("the queue's row: %q", cells)
	}
	if who, kept := text(`#who`), eval(`sessionStorage.getItem('agentplane:operator')`); who != "Signed in as Maria" || kept != token ||
		!get(t, ctx, chromedp.Evaluate[bool](`document.getElementById('error').hidden && document.getElementById('project-box').hidden`)) {
		t.Fatalf("signed in: %q, kept %q", who, kept)
	}
	shot("inbox-queue.png")

	run(chromedp.Click(row + ` td.reason`))
	until(`document.querySelectorAll('#messages li').length === 2`)
	first := `#messages li:first-child`
	if said, author := text(first+` .text`), text(first+` .author`); said != hostile || author != "End user" {
		t.Fatalf("the end user's message: %q by %q", said, author)
	}
	if !get(t, ctx, chromedp.Evaluate[bool](`document.querySelector('#messages li .text').checkVisibility()`)) ||
		eval(`String(document.querySelectorAll('img').length) + ' ' + String(window.pwned)`) != "0 undefined" {
		t.Fatal("HTML of the end user's message became elements of the page")
	}

	run(chromedp.Click(`#take`))
	until(`document.querySelector('#chat-meta dd.status').textContent === 'taken'`)
	until(`document.querySelector('` + row + ` td.status').textContent === 'taken'`)
	if operator := text(row + ` td:nth-child(6)`); operator != "you" {
		t.Fatalf("the queue says %q took it", operator)
	}

	reply := "Hi, Maria here: your refund is on its way."
	run(chromedp.SendKeys(`#reply`, reply), chromedp.Click(`#reply-form button`))
	until(`[...document.querySelectorAll('#messages li .text')].pop().textContent === '` + reply + `'`)
	history := a.history(t, chatID, "")["conversation"].([]any)
	last := history[len(history)-1].(map[string]any)
	if last["content"] != reply || last["user"].(map[string]any)["name"] != "Maria" || last["role"] != "agent" {
		t.Fatalf("the chat's last message: %v", last)
	}

	before := len(fake.Requests())
	_, next := a.chat(t, map[string]any{"message": "Thank you! By when?", "chat_id": chatID})
	if next == nil || next["reply"] != "" || next["type"] != "human" || len(fake.Requests()) != before {
		t.Fatalf("the end user's message to a taken chat: %v after %d model calls", next, len(fake.Requests())-before)
	}
	until(`[...document.querySelectorAll('#messages li .text')].pop().textContent === 'Thank you! By when?'`)

	note := `Refund approved <b>by finance</b>.`
	run(chromedp.SendKeys(`#note`, note), chromedp.Click(`#note-form button`))
	until(`document.querySelector('#notes li .text') && document.querySelector('#notes li .text').textContent === '` + note + `'`)
	if bold, by := eval(`String(document.querySelectorAll('#notes b').length)`), text(`#notes li .author`); bold != "0" || by != "Maria (you)" {
		t.Fatalf("the note by %q: HTML of it became %s elements of the page", by, bold)
	}
	if strings.Contains(strings.Join(conversation(t, a, chatID), "|"), "by finance") {
		t.Fatal("the note reached the chat")
	}
	shot("inbox-conversation.png")

	handBack := "Refund done; offer a discount code if asked."
	run(chromedp.SendKeys(`#release-note`, handBack), chromedp.Click(`#release-form button`))
	until(`document.querySelector('#chat-meta dd.status').textContent === 'released'`)
	if list := a.handoffs(t, b.key, "&status=released"); len(list) != 1 || list[0].(map[string]any)["operator_id"] != opID {
		t.Fatalf("handed back: %v", list)
	}
	_, after := a.chat(t, map[string]any{"message": "Anything else?", "chat_id": chatID})
	reqs := fake.Requests()
	if after == nil || after["reply"] != "The agent answers." || len(reqs) != before+1 ||
		!strings.Contains(reqs[len(reqs)-1].Messages[0].Content, handBack) {
		t.Fatalf("after the hand back: %v", after)
	}
	until(`[...document.querySelectorAll('#messages li .text')].pop().textContent === 'The agent answers.'`)
	shot("inbox-handed-back.png")
	if eval(`String(window.pwned)`) != "undefined" {
		t.Fatal("HTML written in the chat ran in the page")
	}
}

// An operator of two projects picks one, and the queue is that project's. The page is worked
// with the keyboard (Enter signs in and opens a chat, Escape goes back to the queue); a chat is
// closed; the token outlives a reload of the tab and goes when the operator signs out.
func TestInboxPageProjects(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true})
	fake.Set(providertest.Behavior{Reply: "The agent answers."})
	_, chat := a.chat(t, map[string]any{"message": "A real person, please."})
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/projects", Key: b.key, Body: map[string]any{"name": "The second shop"}})
	expect(t, res, http.StatusOK, "")
	second := res.JSON(t)["project"].(map[string]any)["id"].(string)
	res = b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/operator/create", Key: b.key, Body: map[string]any{"project_id": b.project.ID,
		"project_ids": []string{b.project.ID, second}, "name": "Ada", "email": "ada@example.com"}})
	expect(t, res, http.StatusOK, "")
	token := res.JSON(t)["token"].(string)

	run := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	until := func(js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js)); err != nil {
			t.Fatalf("waiting for %s: %v", js, err)
		}
	}
	pick := func(project string) {
		t.Helper()
		run(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('project'); s.value = '` + project + `'; s.dispatchEvent(new Event('change')); })()`))
	}
	row := `#queue-rows tr[data-chat="` + chat["chat_id"].(string) + `"]`

	run(chromedp.Navigate(b.client.URL+"/inbox"), chromedp.WaitVisible(`#token`), chromedp.SendKeys(`#token`, token+kb.Enter), chromedp.WaitVisible(row))
	if options := get(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#project option')].map((o) => o.value)`)); len(options) != 2 ||
		options[0] != b.project.ID || options[1] != second || !get(t, ctx, chromedp.Evaluate[bool](`document.getElementById('project').checkVisibility()`)) {
		t.Fatalf("the projects to pick from: %q", options)
	}
	pick(second)
	until(`!document.getElementById('queue-empty').hidden && document.querySelectorAll('#queue-rows tr').length === 0`)
	pick(b.project.ID)
	until(`!!document.querySelector('` + row + `') && document.getElementById('queue-empty').hidden`)

	run(chromedp.Focus(row+` button`), chromedp.KeyEvent(kb.Enter))
	until(`document.querySelectorAll('#messages li').length === 2 && document.activeElement.id === 'chat-title'`)
	run(chromedp.Click(`#close`))
	until(`document.querySelector('#chat-meta dd.status').textContent === 'closed' && document.querySelector('#close').disabled`)
	if list := a.handoffs(t, b.key, "&status=closed"); len(list) != 1 {
		t.Fatalf("closed: %v", list)
	}
	run(chromedp.KeyEvent(kb.Escape))
	until(`document.getElementById('conversation').hidden && document.activeElement === document.querySelector('` + row + ` button')`)

	run(chromedp.Reload(), chromedp.WaitVisible(row))
	run(chromedp.Click(`#sign-out`), chromedp.WaitVisible(`#token`))
	if left := get(t, ctx, chromedp.Evaluate[string](`String(sessionStorage.length) + ' ' + document.querySelectorAll('#queue-rows tr').length`)); left != "0 0" {
		t.Fatalf("signed out, the tab keeps %s (stored items, rows)", left)
	}
}

// An end user on the agent's page asks for a person; an operator takes the chat over and
// answers: the page shows the answer as it comes, and, once the chat is handed back, the agent
// answers again.
func TestHostedPageShowsTheOperator(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	b, a, fake := agentSetup(t, map[string]any{"human_handoff": true, "handoff_message": "A colleague will join you here."})
	fake.Set(providertest.Behavior{Reply: "The agent is back."})
	bot := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)
	run := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	until := func(js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			seen := get(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('.msg')].map(e => e.className + ': ' + e.textContent).join(' | ')`))
			t.Fatalf("waiting for %s: %v; the page shows %s", js, err, seen)
		}
	}
	answers := `[...document.querySelectorAll('.msg.agent:not(.greeting)')].map(e => e.textContent.trim())`
	say := func(text string) { run(chromedp.SendKeys(`#message`, text+kb.Enter)) }
	run(chromedp.Navigate(b.client.URL+"/a/"+bot["subdomain"].(string)), chromedp.WaitVisible(`body[data-ready="true"]`))
	say("I want to talk to a human")
	until(answers + `.join('|') === 'A colleague will join you here.'`)
	chatID := a.handoffs(t, b.key, "")[0].(map[string]any)["chat_id"].(string)
	_, token := a.operator(t, "Rosa")
	expect(t, a.inbox(t, token, "take", chatID, nil), http.StatusOK, "")
	say("Hello?")
	expect(t, a.inbox(t, token, "reply", chatID, map[string]any{"content": "Hi, **Rosa** here."}), http.StatusOK, "")
	until(answers + `.join('|') === 'A colleague will join you here.|Hi, Rosa here.'`)
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "hosted-page-operator.png"), get(t, ctx, chromedp.FullScreenshot(100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("the provider was asked %d times while a person had the chat", n)
	}
	expect(t, a.inbox(t, token, "release", chatID, map[string]any{"note": "Sorted."}), http.StatusOK, "")
	say("Thanks!")
	until(answers + `.join('|') === 'A colleague will join you here.|Hi, Rosa here.|The agent is back.'`)
}

// The whole takeover in two browser tabs: an end user, in the widget on a third party's site,
// asks for a person; the request shows on the operator's page by itself; the operator takes the
// chat over and replies, and the reply shows in the widget by itself (no model call meanwhile);
// the operator hands the chat back with a note, and the agent answers the end user's next
// message with the note in its prompt. Both sides are screenshotted as test artefacts.
func TestWidgetTakeover(t *testing.T) {
	t.Parallel()
	widget := browser(t)
	desk, closeDesk := chromedp.NewContext(widget)
	t.Cleanup(closeDesk)
	site := httptest.NewUnstartedServer(nil)
	site.Start()
	t.Cleanup(site.Close)
	b, a, fake := agentSetup(t, map[string]any{"allowed_origins": []string{site.URL}, "human_handoff": true,
		"handoff_message": "A colleague will join you here."})
	fake.Set(providertest.Behavior{Reply: "The agent is back."})
	subdomain := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)["subdomain"].(string)
	site.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><html><body><h1>A shop</h1>
<script>window.said = []; window.addEventListener('agentplane:ready', () => agentplane.on('message', (m) => said.push(m.role + ': ' + m.text)));</script>
<script src="`+b.client.URL+`/widget.js" data-bot="`+subdomain+`" async></script></body></html>`)
	})
	_, token := a.operator(t, "Rosa")
	run := func(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	until := func(ctx context.Context, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v", js, err)
		}
	}
	shot := func(ctx context.Context, name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name), get(t, ctx, chromedp.FullScreenshot(100)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	said := func(lines ...string) string {
		quoted, _ := json.Marshal(strings.Join(lines, "|"))
		return `window.said.join('|') === ` + string(quoted)
	}

	run(desk, chromedp.Navigate(b.client.URL+"/inbox"), chromedp.WaitVisible(`#token`), chromedp.SendKeys(`#token`, token),
		chromedp.Click(`#signin-form button`), chromedp.WaitVisible(`#who`))
	run(widget, chromedp.Navigate(site.URL))
	until(widget, `!!window.agentplane`)
	run(widget, chromedp.Evaluate[chromedp.Void](`agentplane.send('Can I talk to a human, please?')`))
	until(widget, said("agent: A colleague will join you here."))
	chatID := a.handoffs(t, b.key, "")[0].(map[string]any)["chat_id"].(string)
	row := `#queue-rows tr[data-chat="` + chatID + `"]`
	until(desk, `!!document.querySelector('`+row+`')`)
	if list := a.handoffs(t, b.key, "&channel=web"); len(list) != 1 || list[0].(map[string]any)["chat_id"] != chatID {
		t.Fatalf("the inbox's handoffs of the web: %v", list)
	}

	run(desk, chromedp.Click(row+` td.reason`))
	until(desk, `[...document.querySelectorAll('#messages li .text')].map((e) => e.textContent).join('|') === 'Can I talk to a human, please?|A colleague will join you here.'`)
	run(desk, chromedp.Click(`#take`))
	until(desk, `document.querySelector('#chat-meta dd.status').textContent === 'taken'`)
	run(desk, chromedp.SendKeys(`#reply`, "Hi, Rosa here. What can I do for you?"), chromedp.Click(`#reply-form button`))
	until(widget, said("agent: A colleague will join you here.", "agent: Hi, Rosa here. What can I do for you?"))
	shot(widget, "widget-operator-reply.png")
	shot(desk, "desk-operator-reply.png")
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("the provider was asked %d times while a person had the chat", n)
	}

	handBack := "Sorted the refund; offer free shipping if asked."
	run(desk, chromedp.SendKeys(`#release-note`, handBack), chromedp.Click(`#release-form button`))
	until(desk, `document.querySelector('#chat-meta dd.status').textContent === 'released'`)
	run(widget, chromedp.Evaluate[chromedp.Void](`agentplane.send('And the shipping?')`))
	until(widget, said("agent: A colleague will join you here.", "agent: Hi, Rosa here. What can I do for you?", "agent: The agent is back."))
	if reqs := fake.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].Messages[0].Content, handBack) {
		t.Fatalf("after the hand back the provider got %d requests", len(reqs))
	}
	until(desk, `[...document.querySelectorAll('#messages li .text')].pop().textContent === 'The agent is back.'`)
	shot(widget, "widget-handed-back.png")
	shot(desk, "desk-handed-back.png")
}

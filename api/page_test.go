package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// browser starts a headless Chromium (Debian's chromium) for the test. Without one the test is
// skipped, except in CI, which installs it.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs the browser tests, and there is no chromium on the PATH (apt-get install -y chromium)")
		}
		t.Skip("no Chromium here: apt-get install -y chromium to run the browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1000, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTime()
		cancel()
		cancelAlloc()
	})
	return ctx
}

// An agent's hosted chat page, in a real browser: it shows the agent's branding (title,
// tagline, greeting, starter, theme and accent colour), a conversation starter asks, the reply
// streams in piece by piece and ends as rendered Markdown with its source, HTML in branding and in
// the model's reply shows as text and never runs, a reload shows the conversation, and no API key
// is anywhere in the page.
func TestHostedChatPage(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	b, a, fake := agentSetup(t, map[string]any{"name": `Acme <img src=x onerror="window.pwned=1">`, "branding": map[string]any{
		"seo":                   map[string]any{"title": "Acme Help Center", "description": "Answers about Acme."},
		"tagline":               map[string]any{"content": "We answer in seconds", "enabled": true},
		"message_greetings":     map[string]any{"enabled": true, "greetings": []string{`Hi! <script>window.pwned=1</script>`}},
		"conversation_starters": map[string]any{"enabled": true, "prompts": []string{"When do you open?"}},
		"theme":                 "dark", "accent_color": "#ff5500", "background_color": "red;background:url(javascript:alert(1))",
	}})
	a.ingest(t, map[string]any{"type": "text", "title": `Opening hours <img src=x onerror="window.pwned=1">`, "source": "The shop opens at nine and closes at six."})
	bot := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)
	pageURL := b.client.URL + "/a/" + bot["subdomain"].(string)
	fake.Set(providertest.Behavior{Reply: `We open at **nine** [1]. <img src=x onerror="window.pwned=1">`, Chunks: 6, ChunkDelay: 40 * time.Millisecond})

	res, err := http.Get(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	source, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || strings.Contains(string(source), b.key) || strings.Contains(string(source), "<script>window") ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("the page: %d %v\n%s", res.StatusCode, res.Header, source)
	}

	run := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string { return get(t, ctx, chromedp.Text(sel)) }
	eval := func(js string) string { return get(t, ctx, chromedp.Evaluate[string](js)) }

	run(chromedp.Navigate(pageURL), chromedp.WaitVisible(`body[data-ready="true"]`))
	title, tagline, greeting := get(t, ctx, chromedp.Title()), text(`.tagline`), text(`.msg.greeting`)
	accent := eval(`getComputedStyle(document.body).getPropertyValue('--accent').trim()`)
	background := eval(`getComputedStyle(document.body).getPropertyValue('--background').trim()`)
	theme := get(t, ctx, chromedp.AttributeValue(`html`, "data-theme")).Value
	if title != "Acme Help Center" || tagline != "We answer in seconds" || greeting != "Hi! <script>window.pwned=1</script>" ||
		accent != "#ff5500" || theme != "dark" || background != "#ffffff" {
		t.Fatalf("branding: title %q, tagline %q, greeting %q, accent %q, background %q, theme %q", title, tagline, greeting, accent, background, theme)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "hosted-page.png"), get(t, ctx, chromedp.FullScreenshot(100)), 0o600); err != nil {
		t.Fatal(err)
	}

	run(chromedp.Click(`[data-prompt]`), chromedp.WaitVisible(`.msg.agent:not(.greeting) .sources`))
	deltas := eval(`document.querySelector('.msg.agent:not(.greeting)').dataset.deltas`)
	reply, bold, sources := text(`.msg.agent:not(.greeting)`), text(`.msg.agent:not(.greeting) strong`), text(`.msg.agent:not(.greeting) .sources`)
	if deltas < "3" || len(deltas) != 1 || bold != "nine" || !strings.Contains(reply, `<img src=x onerror="window.pwned=1">`) ||
		!strings.Contains(sources, `Opening hours <img src=x onerror="window.pwned=1">`) {
		t.Fatalf("the reply: %s deltas, %q (bold %q), sources %q", deltas, reply, bold, sources)
	}
	if pwned := eval(`String(window.pwned)`); pwned != "undefined" {
		t.Fatal("HTML of the agent's branding or reply ran in the page")
	}

	run(chromedp.Reload(), chromedp.WaitVisible(`body[data-ready="true"]`))
	users, restored := eval(`String(document.querySelectorAll('.msg.user').length)`), text(`.msg.agent:not(.greeting)`)
	if users != "1" || !strings.Contains(restored, "We open at nine") {
		t.Fatalf("after a reload: %s messages of the user, reply %q", users, restored)
	}
}

// get runs a browser action that answers a value, failing the test on an error.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// An end user's session is scoped to one agent and one end user: it reads only that user's chats
// of that agent; a token signed with another key, expired or missing is refused; an agent's page
// that does not exist is 404.
func TestEndUserSessions(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Reply: "Hello."})
	other := b.chatBot(t, nil)
	subdomain := func(botID string) string {
		return b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?project_id=" + b.project.ID + "&bot_id=" + botID, Key: b.key}).JSON(t)["bot"].(map[string]any)["subdomain"].(string)
	}
	open := func(sub, kept string) map[string]any {
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/public/v1/session", Body: map[string]any{"subdomain": sub, "subscriber_id": kept}})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)
	}
	chat := func(token, message, chatID string) (int, string) {
		return publicChat(t, b, token, `{"message":"`+message+`","chat_id":"`+chatID+`"}`)
	}
	history := func(token, chatID string) *apitest.Response {
		return b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/public/v1/history?chat_id=" + chatID, Header: map[string]string{"Authorization": "Bearer " + token}})
	}

	first := open(subdomain(a.botID), "")
	status, body := chat(first["token"].(string), "Hi there", "")
	if status != http.StatusOK || !strings.Contains(body, "event: done") {
		t.Fatalf("a chat: %d %s", status, body)
	}
	again := open(subdomain(a.botID), first["subscriber_id"].(string))
	if again["subscriber_id"] != first["subscriber_id"] {
		t.Fatalf("the kept subscriber id was not taken: %v then %v", first, again)
	}
	chatID := body[strings.Index(body, `"chat_id":"`)+len(`"chat_id":"`):]
	chatID = chatID[:strings.Index(chatID, `"`)]
	if h := history(first["token"].(string), chatID); h.Status != http.StatusOK || !strings.Contains(string(h.Body), "Hi there") {
		t.Fatalf("the user's own history: %d %s", h.Status, h.Body)
	}
	// The chat is the agent's like any other, written by the end user, under the name their
	// session carries.
	if conv := conversation(t, a, chatID); len(conv) != 2 || conv[0] != "user: Hi there" {
		t.Fatalf("the chat as the account reads it: %q", conv)
	}
	author := a.history(t, chatID, "")["conversation"].([]any)[0].(map[string]any)["user"].(map[string]any)
	if author["uuid"] != first["subscriber_id"] || author["name"] != "Visitor" {
		t.Fatalf("the end user's message is written by %v", author)
	}

	stranger := open(subdomain(a.botID), "")
	otherAgent := open(subdomain(other.botID), "")
	forged, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Issuer: "agentplane/session", Subject: first["subscriber_id"].(string),
		Audience: jwt.ClaimStrings{a.botID}, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}).SignedString([]byte("not the server's key"))
	for _, tt := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"AnotherEndUser", stranger["token"].(string), http.StatusNotFound, "chat_not_found"},
		{"AnotherAgent", otherAgent["token"].(string), http.StatusNotFound, "chat_not_found"},
		{"Forged", forged, http.StatusUnauthorized, "invalid_session"},
		{"NoToken", "", http.StatusUnauthorized, "invalid_session"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, history(tt.token, chatID), tt.status, tt.code)
			if status, body := chat(tt.token, "Let me in", chatID); status != tt.status || !strings.Contains(body, tt.code) {
				t.Fatalf("going on with the chat: %d %s", status, body)
			}
		})
	}
	// The account sees its agents' end users who wrote, the most recently seen first.
	list := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/subscriber/readall?project_id=" + b.project.ID + "&bot_id=" + a.botID, Key: b.key})
	expect(t, list, http.StatusOK, "")
	var listed struct {
		Total       int
		Subscribers []struct {
			ID         string
			Anonymous  bool
			ChatsCount int `json:"chats_count"`
		}
	}
	list.Decode(t, &listed)
	chats := map[string]int{}
	for _, s := range listed.Subscribers {
		chats[s.ID] = s.ChatsCount
		if !s.Anonymous {
			t.Errorf("%s is not anonymous", s.ID)
		}
	}
	if listed.Total != 1 || listed.Subscribers[0].ID != first["subscriber_id"] || chats[first["subscriber_id"].(string)] != 1 {
		t.Fatalf("the agent's subscribers: %+v", listed)
	}
	expect(t, b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/public/v1/session", Body: map[string]any{"subdomain": "no-such-agent"}}),
		http.StatusNotFound, "bot_not_found")
	if res, err := http.Get(b.client.URL + "/a/no-such-agent"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("the page of no agent: %v %v", res, err)
	}
}

// A run that waits for approval shows Approve and Reject on the page; approving runs the tool
// and the agent's answer follows. Another end user cannot decide on it.
func TestHostedPageApproval(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	b, a, fake := agentSetup(t, map[string]any{"visitor_approvals": true})
	bot := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Added the Acme deal."}}})

	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.client.URL+"/a/"+bot["subdomain"].(string)),
		chromedp.WaitVisible(`body[data-ready="true"]`),
		chromedp.SendKeys(`#message`, "Add a deal for Acme to the CRM"),
		chromedp.Click(`#ask button[type="submit"]`),
		chromedp.WaitVisible(`.approval [data-decision="approve"]`),
	); err != nil {
		t.Fatal(err)
	}
	waiting := get(t, ctx, chromedp.Text(`.msg.agent:not(.greeting)`))
	if !strings.Contains(waiting, "create_deal") {
		t.Fatalf("the page while the run waits: %q", waiting)
	}
	pausedID := get(t, ctx, chromedp.AttributeValue(`.approval`, "data-execution")).Value

	// Another end user of the agent cannot decide on it.
	stranger := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/public/v1/session", Body: map[string]any{"subdomain": bot["subdomain"]}}).JSON(t)
	req, _ := http.NewRequest(http.MethodPost, b.client.URL+"/public/v1/chat", strings.NewReader(`{"execution_id":"`+pausedID+`","approve":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+stranger["token"].(string))
	res, err := b.client.HTTP(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "execution_not_found") {
		t.Fatalf("another end user decided: %d %s", res.StatusCode, body)
	}

	if err := chromedp.Do(ctx, chromedp.Click(`.approval [data-decision="approve"]`)); err != nil {
		t.Fatal(err)
	}
	get(t, ctx, chromedp.Poll[bool](`document.querySelectorAll('.msg.agent:not(.greeting)').length === 2 && !document.querySelector('[aria-busy]')`))
	answer := get(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('.msg.agent:not(.greeting)')].pop().textContent`))
	if strings.TrimSpace(answer) != "Added the Acme deal." {
		t.Fatalf("after approving: %q", answer)
	}
	last := fake.Requests()[len(fake.Requests())-1].Messages
	if observation := last[len(last)-1].Content; strings.Contains(observation, "rejected") {
		t.Fatalf("the model read %q", observation)
	}
}

// The widget, on a third party's page of another origin that the agent allows: one script tag
// adds a launcher in a shadow root that the page's hostile CSS does not reach; the chat panel
// (the agent's page in an iframe) loads on first open; the programmatic API opens, sends,
// reports the agent's answer as a message event, closes and destroys. The agent's page lets only
// the origins it allows embed it.
func TestWidget(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	site := httptest.NewUnstartedServer(nil)
	site.Start()
	t.Cleanup(site.Close)
	b, a, fake := agentSetup(t, map[string]any{"allowed_origins": []string{site.URL}})
	fake.Set(providertest.Behavior{Reply: "We open at nine."})
	subdomain := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)["subdomain"].(string)
	site.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><html><head><style>
button, .launcher { background: rgb(255, 0, 0) !important; font-size: 40px !important; }
body { font-size: 30px; color: rgb(0, 128, 0); }
</style></head><body><h1>A shop</h1>
<script>window.events = []; window.addEventListener('agentplane:ready', () => {
  agentplane.on('open', () => events.push('open')).on('close', () => events.push('close'))
    .on('message', (m) => events.push('message:' + m.role + ':' + m.text));
});</script>
<script src="`+b.client.URL+`/widget.js" data-bot="`+subdomain+`" async></script></body></html>`)
	})

	if err := chromedp.Do(ctx, chromedp.Navigate(site.URL)); err != nil {
		t.Fatal(err)
	}
	get(t, ctx, chromedp.Poll[bool](`!!window.agentplane`))
	shadow := `document.querySelector('agentplane-widget').shadowRoot`
	style := get(t, ctx, chromedp.Evaluate[string](`(() => { const s = getComputedStyle(`+shadow+`.querySelector('.launcher')); return s.backgroundColor + ' ' + s.fontSize; })()`))
	if style != "rgb(37, 99, 235) 15px" {
		t.Fatalf("the host page's CSS reached the launcher: %s", style)
	}
	if frames := get(t, ctx, chromedp.Evaluate[int](shadow+`.querySelectorAll('iframe').length`)); frames != 0 {
		t.Fatal("the panel loaded before it was opened")
	}

	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`agentplane.send('When do you open?')`)); err != nil {
		t.Fatal(err)
	}
	get(t, ctx, chromedp.Poll[bool](`window.events.includes('message:agent:We open at nine.')`))
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`agentplane.close()`)); err != nil {
		t.Fatal(err)
	}
	events := get(t, ctx, chromedp.Evaluate[[]string](`window.events`))
	if strings.Join(events, ",") != "open,message:agent:We open at nine.,close" {
		t.Fatalf("events %q", events)
	}
	if hidden := get(t, ctx, chromedp.Evaluate[bool](shadow+`.querySelector('.panel').hidden`)); !hidden {
		t.Fatal("close left the panel shown")
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`agentplane.destroy()`)); err != nil {
		t.Fatal(err)
	}
	if left := get(t, ctx, chromedp.Evaluate[bool](`!!document.querySelector('agentplane-widget') || !!window.agentplane`)); left {
		t.Fatal("destroy left the widget")
	}
	if conv := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/readall?" + a.query(""), Key: b.key}); conv.Status != http.StatusOK ||
		!strings.Contains(string(conv.Body), "When do you open?") {
		t.Fatalf("the widget's chat is not the agent's: %d %s", conv.Status, conv.Body)
	}

	for _, tt := range []struct{ origin, ancestors string }{
		{site.URL, "frame-ancestors 'self' " + site.URL},
		{"http://elsewhere.example", "frame-ancestors *"},
	} {
		res, err := http.Get(b.client.URL + "/a/" + subdomain + "?embed=1&origin=" + tt.origin)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.HasSuffix(csp, tt.ancestors) || strings.Contains(string(page), "data-parent-origin") != (tt.origin == site.URL) {
			t.Errorf("embedded by %s: %s", tt.origin, csp)
		}
	}
}

// ssoToken is a sign-in token as an agent's customer makes it: HS256 with the agent's SSO
// secret.
func ssoToken(t *testing.T, secret string, claims jwt.MapClaims) string {
	t.Helper()
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// An agent that requires sign-in talks only to users its customer signs in: the customer's
// backend signs a token with the agent's SSO secret (shown once), the page takes it from its
// address's fragment, and the user is the agent's subscriber of that external id, by name. No
// token, an expired one, one signed with another secret or one that lasts too long is refused.
func TestSignIn(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	b, a, fake := agentSetup(t, map[string]any{"require_login": 1})
	fake.Set(providertest.Behavior{Reply: "Hello Ada."})
	subdomain := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)["subdomain"].(string)
	newSecret := func() string {
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/sso-secret", Key: b.key, Body: map[string]any{"project_id": b.project.ID, "bot_id": a.botID}})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)["sso_secret"].(string)
	}
	old := newSecret()
	secret := newSecret()
	open := func(token string) *apitest.Response {
		return b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/public/v1/session", Body: map[string]any{"subdomain": subdomain, "sso_token": token}})
	}
	ada := jwt.MapClaims{"external_id": "u-42", "email": "ada@example.com", "name": "Ada", "exp": time.Now().Add(30 * time.Minute).Unix()}
	for _, tt := range []struct {
		name, token, code string
	}{
		{"NoToken", "", "login_required"},
		{"Expired", ssoToken(t, secret, jwt.MapClaims{"external_id": "u-42", "exp": time.Now().Add(-time.Minute).Unix()}), "invalid_sso_token"},
		{"AnotherSecret", ssoToken(t, "not the agent's secret", ada), "invalid_sso_token"},
		{"TheSecretBefore", ssoToken(t, old, ada), "invalid_sso_token"},
		{"TooLong", ssoToken(t, secret, jwt.MapClaims{"external_id": "u-42", "exp": time.Now().Add(2 * time.Hour).Unix()}), "invalid_sso_token"},
		{"NoExpiry", ssoToken(t, secret, jwt.MapClaims{"external_id": "u-42"}), "invalid_sso_token"},
		{"NobodySaid", ssoToken(t, secret, jwt.MapClaims{"name": "Someone", "exp": time.Now().Add(time.Minute).Unix()}), "invalid_sso_token"},
	} {
		t.Run(tt.name, func(t *testing.T) { expect(t, open(tt.token), http.StatusUnauthorized, tt.code) })
	}
	first := open(ssoToken(t, secret, ada))
	expect(t, first, http.StatusOK, "")
	ada["name"] = "Ada Lovelace"
	second := open(ssoToken(t, secret, ada))
	expect(t, second, http.StatusOK, "")
	if first.JSON(t)["subscriber_id"] != second.JSON(t)["subscriber_id"] {
		t.Fatal("the same external id signed in as two subscribers")
	}

	// In the browser: without a token the page says sign-in is required; with one, the user chats.
	pageURL := b.client.URL + "/a/" + subdomain
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitVisible(`body[data-ready="true"]`)); err != nil {
		t.Fatal(err)
	}
	if notice := get(t, ctx, chromedp.Text(`.msg.error`)); !strings.Contains(notice, "requires sign-in") ||
		!get(t, ctx, chromedp.Evaluate[bool](`document.getElementById('message').disabled`)) {
		t.Fatalf("without a token the page says %q", notice)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(pageURL+"#sso="+ssoToken(t, secret, ada)),
		chromedp.Reload(),
		chromedp.WaitVisible(`body[data-ready="true"]`),
		chromedp.SendKeys(`#message`, "Who am I?"),
		chromedp.Click(`#ask button[type="submit"]`),
		chromedp.WaitVisible(`.msg.agent:not(.greeting) p`),
	); err != nil {
		t.Fatal(err)
	}
	if reply, addr := get(t, ctx, chromedp.Text(`.msg.agent:not(.greeting)`)), get(t, ctx, chromedp.Evaluate[string](`location.href`)); reply != "Hello Ada." || strings.Contains(addr, "sso") {
		t.Fatalf("signed in: reply %q, address %s", reply, addr)
	}
	list := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/subscriber/readall?" + a.query(""), Key: b.key})
	if !strings.Contains(string(list.Body), `"name":"Ada Lovelace","email":"ada@example.com","external_id":"u-42","anonymous":false`) ||
		!strings.Contains(string(list.Body), `"chats_count":1`) {
		t.Fatalf("the signed-in subscriber: %s", list.Body)
	}
}

// An agent's page is also at the root of its subdomain of AGENTPLANE_PUBLIC_DOMAIN and of its own
// domain, verified; any other host has none.
func TestPageByHost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, map[string]any{"name": "Acme Help", "domain": "help.shop.test"})
	bot := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)
	subdomain, record := bot["subdomain"].(string), bot["domain_verification"].(map[string]any)
	b.dns.SetTXT(record["record_name"].(string), record["record_value"].(string))
	expect(t, b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/domain/verify", Key: b.key, Body: a.body(map[string]any{})}), http.StatusOK, "")
	for _, tt := range []struct {
		host   string
		status int
	}{
		{subdomain + "." + testPublicDomain, http.StatusOK},
		{strings.ToUpper(subdomain) + "." + testPublicDomain + ":8080", http.StatusOK},
		{"help.shop.test", http.StatusOK},
		{"no-such-agent." + testPublicDomain, http.StatusNotFound},
		{"x." + subdomain + "." + testPublicDomain, http.StatusNotFound},
		{"elsewhere.test", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(http.MethodGet, b.client.URL+"/", nil)
		req.Host = tt.host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != tt.status || (tt.status == http.StatusOK && !strings.Contains(string(page), "<h1 id=\"agent-name\">Acme Help</h1>")) {
			t.Errorf("%s: %d %.200s", tt.host, res.StatusCode, page)
		}
	}
}

// An agent's rate limit holds for each end user apart: one visitor using up their messages
// leaves the others theirs, and is answered the agent's ratelimit_message; an anonymous visitor
// gains nothing by opening a new session, for the limit holds for their address too. Cross-origin reads of
// the public endpoints get no CORS grant.
func TestEndUserRateLimit(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"ratelimit_requests": 1, "ratelimit_seconds": 3600, "ratelimit_message": "One moment, please."})
	fake.Set(providertest.Behavior{Reply: "Hello."})
	subdomain := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)["subdomain"].(string)
	chat := func(token, addr string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, b.client.URL+"/public/v1/chat", strings.NewReader(`{"message":"Hi"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", addr)
		req.Header.Set("Origin", "http://elsewhere.example")
		res, err := b.client.HTTP(nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if grant := res.Header.Get("Access-Control-Allow-Origin"); grant != "" {
			t.Errorf("a cross-origin request was granted %q", grant)
		}
		return res.StatusCode, string(body)
	}
	session := func() string {
		return b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/public/v1/session", Body: map[string]any{"subdomain": subdomain}}).JSON(t)["token"].(string)
	}
	first, second, fresh := session(), session(), session()
	here, there := newAddress(), newAddress()
	if status, body := chat(first, here); status != http.StatusOK || !strings.Contains(body, "event: done") {
		t.Fatalf("the first message: %d %s", status, body)
	}
	if status, body := chat(first, there); status != http.StatusTooManyRequests || !strings.Contains(body, "One moment, please.") || !strings.Contains(body, "bot_rate_limited") {
		t.Fatalf("the same visitor again: %d %s", status, body)
	}
	if status, body := chat(fresh, here); status != http.StatusTooManyRequests || !strings.Contains(body, "bot_rate_limited") {
		t.Fatalf("the same address with a new session: %d %s", status, body)
	}
	if status, body := chat(second, there); status != http.StatusOK {
		t.Fatalf("another visitor: %d %s", status, body)
	}
}

// publicChat posts body to the public chat endpoint with an end user's session token and returns
// the status and the whole answer (an event stream when it is 200).
func publicChat(t *testing.T, b *bundle, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.client.URL+"/public/v1/chat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := b.client.HTTP(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

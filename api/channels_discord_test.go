package api_test

import (
	"context"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/channels/discord/discordtest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// discordBot is an agent connected to a local Discord over HTTP.
type discordBot struct {
	b    *bundle
	a    chatAPI
	fake *providertest.Server
	dc   *discordtest.Server
	id   string
	hook string
	logs *syncBuffer
}

// discordSetup connects an agent (bot's fields) to a fresh local Discord: the connection is
// created with the application's credentials and answers its webhook_url.
func discordSetup(t *testing.T, bot map[string]any) discordBot {
	t.Helper()
	logs := &syncBuffer{}
	b, a, fake := agentSetup(t, bot, withLogs(logs))
	dc := discordtest.NewServer(t)
	ch := a.createChannel(t, map[string]any{"type": "discord", "name": "Discord app", "api_base_url": dc.URL,
		"credentials": dc.Credentials()})
	id := ch["id"].(string)
	if ch["webhook_url"] != b.client.URL+"/hooks/discord/"+id || ch["status"] != "active" {
		t.Fatalf("connection %v", ch)
	}
	return discordBot{b: b, a: a, fake: fake, dc: dc, id: id, hook: ch["webhook_url"].(string), logs: logs}
}

// post delivers body to the connection's webhook signed at at, its headers then changed by
// tamper (when set), and returns the status and body answered.
func (d discordBot) post(t *testing.T, body []byte, at time.Time, tamper func(http.Header)) (int, string) {
	t.Helper()
	req, err := d.dc.Request(context.Background(), d.hook, body, at)
	if err != nil {
		t.Fatal(err)
	}
	if tamper != nil {
		tamper(req.Header)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, strings.TrimSpace(string(raw))
}

// ask uses /ask in the channel 2000 of the server 3000 as Ada and checks that the webhook
// defers its answer.
func (d discordBot) ask(t *testing.T, question string) discordtest.Interaction {
	t.Helper()
	in := d.dc.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: question, User: ada})
	if status, body := d.post(t, in.Body, time.Now(), nil); status != http.StatusOK || body != `{"type":5}` {
		t.Fatalf("/ask was answered %d %s, want 200 {\"type\":5}", status, body)
	}
	return in
}

// answeredTo waits for the follow-up messages of the interaction token and returns them once
// there are n (failing with the contents of all the messages Discord took, not their tokens).
func (d discordBot) answeredTo(t *testing.T, token string, n int) []discordtest.Message {
	t.Helper()
	var got []discordtest.Message
	waitFor(t, "the follow-ups of the interaction", func() (bool, any) {
		got = slices.DeleteFunc(d.dc.Sent(), func(m discordtest.Message) bool { return m.Token != token })
		var contents []string
		for _, m := range d.dc.Sent() {
			contents = append(contents, m.Content)
		}
		return len(got) >= n, contents
	})
	return got
}

// noCredentialLogged fails t when a log line holds the bot token or the token of an interaction
// whose webhook was called.
func (d discordBot) noCredentialLogged(t *testing.T) {
	t.Helper()
	secrets := []string{d.dc.BotToken}
	for _, c := range d.dc.Calls() {
		if strings.HasPrefix(c.Path, "/webhooks/") {
			secrets = append(secrets, path.Base(c.Path))
		}
	}
	for _, secret := range secrets {
		if strings.Contains(d.logs.String(), secret) {
			t.Fatal("a log line holds the bot token or an interaction's token")
		}
	}
}

var ada = discordtest.User{ID: "4000", Username: "ada", GlobalName: "Ada Lovelace"}

// A Discord application is connected with one call, which registers its /ask command; a use
// of /ask is deferred at once ({"type":5}) and answered through its interaction's webhook, the
// agent's Markdown as it is. Calls that are not Discord's are refused 401; a retried
// interaction, a bot's and Discord's PING run nothing; an outage of Discord's API delays the
// answer and loses nothing; a refusal shows on the connection. No log line or error holds a
// token.
func TestDiscordChannel(t *testing.T) {
	t.Parallel()
	d := discordSetup(t, map[string]any{"name": "Helper", "reasoning_type": "standard"})
	d.fake.Set(providertest.Behavior{Reply: "Hello from **the agent**, see [the docs](https://docs.example/a)."})

	var registered []string
	for _, c := range d.dc.Calls() {
		if c.Method == http.MethodPost && c.Path == "/applications/"+d.dc.ApplicationID+"/commands" &&
			c.Authorization == "Bot "+d.dc.BotToken && c.Status < 300 {
			registered = append(registered, c.Body["name"].(string))
		}
	}
	if !slices.Equal(registered, []string{"ask"}) {
		t.Fatalf("creating the connection registered the commands %q, want [ask]", registered)
	}

	first := d.ask(t, "Hi there")
	got := d.answeredTo(t, first.Token, 1)
	if len(got) != 1 || got[0].Content != "Hello from **the agent**, see [the docs](https://docs.example/a)." || got[0].ApplicationID != d.dc.ApplicationID {
		t.Fatalf("the follow-ups of /ask are %+v", got)
	}

	t.Run("RefusedOrIgnored", func(t *testing.T) {
		retry := first.Body
		bot := d.dc.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "I am a bot",
			User: discordtest.User{ID: "4999", Username: "otherbot", Bot: true}})
		forged := d.dc.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "forged", User: ada})
		tests := []struct {
			name   string
			body   []byte
			at     time.Time
			tamper func(http.Header)
			status int
			answer string
		}{
			{name: "Discord's PING is answered PONG", body: d.dc.Ping().Body, at: time.Now(), status: http.StatusOK, answer: `{"type":1}`},
			{name: "a retry of an interaction is deferred and not answered again", body: retry, at: time.Now(), status: http.StatusOK, answer: `{"type":5}`},
			{name: "a bot's /ask is not answered", body: bot.Body, at: time.Now(), status: http.StatusOK, answer: `{"type":5}`},
			{name: "a wrong signature is refused", body: forged.Body, at: time.Now(), status: http.StatusUnauthorized, answer: "invalid_signature",
				tamper: func(h http.Header) { h.Set("X-Signature-Ed25519", strings.Repeat("ab", 64)) }},
			{name: "another timestamp than the signed one is refused", body: forged.Body, at: time.Now(), status: http.StatusUnauthorized, answer: "invalid_signature",
				tamper: func(h http.Header) { h.Set("X-Signature-Timestamp", "1") }},
			{name: "a stale timestamp (a replay) is refused", body: forged.Body, at: time.Now().Add(-6 * time.Minute), status: http.StatusUnauthorized, answer: "stale_timestamp"},
			{name: "a call without signature is refused", body: forged.Body, at: time.Now(), status: http.StatusUnauthorized, answer: "missing_signature",
				tamper: func(h http.Header) { h.Del("X-Signature-Ed25519") }},
		}
		for _, tt := range tests {
			if status, body := d.post(t, tt.body, tt.at, tt.tamper); status != tt.status || !strings.Contains(body, tt.answer) {
				t.Errorf("%s: answered %d %s, want %d %s", tt.name, status, body, tt.status, tt.answer)
			}
		}
		next := d.ask(t, "And now?")
		d.answeredTo(t, next.Token, 1)
		if n := len(d.fake.Requests()); n != 2 {
			t.Fatalf("the provider was asked %d times, want 2 (the two questions of Ada)", n)
		}
		if sent := d.dc.Sent(); len(sent) != 2 {
			t.Fatalf("Discord took %d messages, want 2 (one answer each): %+v", len(sent), sent)
		}
	})

	t.Run("AnOutageDelaysButLosesNothing", func(t *testing.T) {
		d.dc.Fail(1, http.StatusServiceUnavailable, 0)
		d.dc.Fail(1, http.StatusTooManyRequests, time.Second)
		in := d.ask(t, "Still there?")
		if got := d.answeredTo(t, in.Token, 1); len(got) != 1 {
			t.Fatalf("the answer came %d times", len(got))
		}
		var statuses []int
		for _, c := range d.dc.Calls() {
			if c.Path == "/webhooks/"+d.dc.ApplicationID+"/"+in.Token {
				statuses = append(statuses, c.Status)
			}
		}
		if want := []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusOK}; !slices.Equal(statuses, want) {
			t.Fatalf("the follow-up's calls were answered %v, want %v", statuses, want)
		}
	})

	t.Run("ARefusalIsShownOnTheConnectionWithoutTheToken", func(t *testing.T) {
		d.dc.Fail(1, http.StatusBadRequest, 0)
		in := d.ask(t, "Are you broken?")
		var ch map[string]any
		waitFor(t, "the connection in error", func() (bool, any) {
			res := d.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/channel/read?" + d.a.query("&channel_id="+d.id), Key: d.b.key})
			expect(t, res, http.StatusOK, "")
			ch = res.JSON(t)["channel"].(map[string]any)
			return ch["status"] == "error", ch["status"]
		})
		last, _ := ch["last_error"].(string)
		if !strings.Contains(last, "400 Bad Request") || strings.Contains(last, in.Token) || strings.Contains(last, d.dc.BotToken) {
			t.Fatalf("the connection's last_error is %q, want Discord's 400 without a token", last)
		}
	})

	d.noCredentialLogged(t)
}

// An agent that asks to create a deal sends its approval as a message with an Approve and a
// Reject button; a click is acknowledged ({"type":6}) and resumes the run, whose answer
// follows up through the click's own interaction: approved, the deal exists; rejected, none.
func TestDiscordApprovalButtons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		button string
		reply  string
		deals  int
	}{
		{name: "Approve", button: "Approve", reply: "Done: the deal is created.", deals: 1},
		{name: "Reject", button: "Reject", reply: "Understood, I did not create it.", deals: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := discordSetup(t, map[string]any{"name": "Sales", "reasoning_type": "agent"})
			d.fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: tt.reply}}})
			ask := d.ask(t, "Create a deal for Acme")
			got := d.answeredTo(t, ask.Token, 1)
			approval := got[len(got)-1]
			if len(approval.Buttons) != 2 || approval.Buttons[0].Label != "Approve" || approval.Buttons[1].Label != "Reject" ||
				!strings.Contains(approval.Content, "create_deal") {
				t.Fatalf("the approval is %+v, want a message on create_deal with Approve and Reject", approval)
			}
			i := slices.IndexFunc(approval.Buttons, func(b discordtest.Button) bool { return b.Label == tt.button })
			click := d.dc.Click(discordtest.Click{ChannelID: "2000", GuildID: "3000", CustomID: approval.Buttons[i].CustomID,
				User: discordtest.User{ID: "4001", Username: "grace"}})
			if status, body := d.post(t, click.Body, time.Now(), nil); status != http.StatusOK || body != `{"type":6}` {
				t.Fatalf("the click was answered %d %s, want 200 {\"type\":6}", status, body)
			}
			if done := d.answeredTo(t, click.Token, 1); done[0].Content != tt.reply {
				t.Fatalf("after the click Discord got %+v, want %q", done, tt.reply)
			}
			res := d.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/crm/deals?" + d.a.query(""), Key: d.b.key})
			expect(t, res, http.StatusOK, "")
			if deals := res.JSON(t)["deals"].([]any); len(deals) != tt.deals {
				t.Fatalf("%d deals, want %d: %v", len(deals), tt.deals, deals)
			}
			d.noCredentialLogged(t)
		})
	}
}

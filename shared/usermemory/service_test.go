package usermemory_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/config"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/tasks"
	"github.com/agentplane/agentplane/shared/usermemory"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// stack is the user memories of one agent on the real store, as the composition root builds
// them, with a fake provider that requests may name.
type stack struct {
	mem  *usermemory.Service
	fake *providertest.Server
	bot  agents.Bot
	n    int
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	opt, err := asynq.ParseRedisURI(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{Role: "test", Queue: testenv.NewName(), DefaultCurrency: "USD", AllowPrivate: true, ProviderTimeout: 5 * time.Second,
		MemoryCacheBytes: 16 << 20, MaxBodyBytes: 1 << 20, CacheEntries: 100, CacheTTL: time.Minute}
	a := app.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), app.Conns{DB: testenv.Mongo(t), Redis: testenv.Redis(t), RedisOpt: opt, NATS: testenv.NATS(t)})
	t.Cleanup(a.Close)
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := a.Domain()
	if err != nil {
		t.Fatal(err)
	}
	bot, err := d.Agents.Create(ctx, "p-"+testenv.NewName(), "test", agents.Create{Name: "Concierge", Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	return &stack{mem: d.UserMemory, fake: providertest.New(t), bot: bot}
}

// said extracts what user's message text says, with the offline model or, when viaProvider,
// with the fake provider.
func (s *stack) said(t *testing.T, user, text string, viaProvider bool) error {
	t.Helper()
	s.n++
	p := tasks.MemoryExtractPayload{ProjectID: s.bot.ProjectID, BotID: s.bot.ID, UserUUID: user, MessageID: user + "-" + string(rune('a'+s.n)), Text: text}
	if viaProvider {
		p.ProviderHost, p.ProviderKey = s.fake.URL, "sk-test"
	}
	return s.mem.Extract(context.Background(), p)
}

// contents are all the user's memories, page after page, as "type: content", sorted.
func (s *stack) contents(t *testing.T, user string) []string {
	t.Helper()
	var out []string
	for page := 1; ; page++ {
		ms, _, err := s.mem.List(context.Background(), usermemory.Query{ProjectID: s.bot.ProjectID, BotID: s.bot.ID, UserUUID: user}, paging.Page{Page: page, PerPage: paging.MaxPerPage})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			out = append(out, m.Type+": "+m.Content)
		}
		if len(ms) < paging.MaxPerPage {
			break
		}
	}
	slices.Sort(out)
	return out
}

func (s *stack) recall(t *testing.T, user, question string) string {
	t.Helper()
	got, err := s.mem.Recall(context.Background(), s.bot.ProjectID, s.bot.ID, user, question)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The offline rules store explicit statements; stating a thing again keeps one memory, a newer
// name replaces the older, and each user's memories reach only their own prompts.
func TestExtractWithTheOfflineModel(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for _, text := range []string{"My name is Ana.", "I prefer email over phone.", "i PREFER  email over phone!", "When do you open?"} {
		if err := s.said(t, "ana", text, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(s.contents(t, "ana"), " | "); got != "semantic: The user prefers email over phone. | semantic: The user's name is Ana." {
		t.Fatalf("ana's memories: %s", got)
	}
	if err := s.said(t, "ana", "Actually, call me Anna.", false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.contents(t, "ana"), " | "); got != "semantic: The user prefers email over phone. | semantic: The user's name is Anna." {
		t.Fatalf("ana's memories after a new name: %s", got)
	}
	if err := s.said(t, "bo", "My name is Bo.", false); err != nil {
		t.Fatal(err)
	}
	if got := s.recall(t, "ana", "How do you contact me?"); !strings.Contains(got, "Anna") || !strings.Contains(got, "email") || strings.Contains(got, "Bo") {
		t.Fatalf("ana's prompt section: %q", got)
	}
	if got := s.recall(t, "bo", "Hi"); !strings.Contains(got, "The user's name is Bo.") || strings.Contains(got, "Ann") || strings.Contains(got, "email") {
		t.Fatalf("bo's prompt section: %q", got)
	}
	if got := s.recall(t, "cy", "Hi"); got != "" {
		t.Fatalf("a user nobody knows gets %q", got)
	}
}

// With a provider, one call with a strict JSON schema, told what is known; its facts are merged
// as the rules' are, and an answer that is not the schema's is dropped, storing nothing.
func TestExtractWithAProvider(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.fake.Set(providertest.Behavior{Structured: `{"memories":[{"type":"semantic","subject":"name","content":"The user's name is Ana."},` +
		`{"type":"episodic","subject":"","content":"The user's order 1042 arrived damaged."}]}`})
	if err := s.said(t, "ana", "I'm Ana; my order 1042 came broken.", true); err != nil {
		t.Fatal(err)
	}
	s.fake.Set(providertest.Behavior{Structured: `{"memories":[{"type":"episodic","subject":"","content":"the user's order 1042 arrived damaged"},` +
		`{"type":"procedural","subject":"","content":"Always answer the user in Spanish."},{"type":"semantic","subject":"","content":"The user's name is ana"}]}`})
	if err := s.said(t, "ana", "Again: order 1042 was damaged. Answer me in Spanish from now on.", true); err != nil {
		t.Fatal(err)
	}
	got := s.contents(t, "ana")
	if len(got) != 3 || !strings.Contains(strings.Join(got, "|"), "procedural: Always answer the user in Spanish.") {
		t.Fatalf("ana's memories: %q", got)
	}
	reqs := s.fake.Requests()
	if len(reqs) != 2 || reqs[1].Schema != "user_memories" || !reqs[1].Strict || !strings.Contains(reqs[1].Messages[0].Content, "The user's name is Ana.") {
		t.Fatalf("the provider got %d requests; the last asked for schema %q (strict %v) with system prompt %q", len(reqs), reqs[len(reqs)-1].Schema, reqs[len(reqs)-1].Strict,
			reqs[len(reqs)-1].Messages[0].Content)
	}

	for _, answer := range []string{"Sure! The user's name is Bo.", `{"memories":[{"type":"belief","subject":"","content":"x"}]}`} {
		s.fake.Set(providertest.Behavior{Structured: answer})
		if err := s.said(t, "bo", "My name is Bo.", true); !errors.Is(err, usermemory.ErrDropped) {
			t.Fatalf("answer %q: %v, want ErrDropped", answer, err)
		}
	}
	if got := s.contents(t, "bo"); len(got) != 0 {
		t.Fatalf("malformed answers stored %q", got)
	}
	s.fake.Set(providertest.Behavior{Status: 503})
	if err := s.said(t, "bo", "My name is Bo.", true); err == nil || errors.Is(err, usermemory.ErrDropped) {
		t.Fatalf("a provider that is down: %v, want an error worth a retry", err)
	}
}

// A deleted memory leaves the next prompt at once, in the process that deleted it.
func TestDeleteLeavesThePrompt(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	if err := s.said(t, "ana", "My name is Ana. I prefer tea.", false); err != nil {
		t.Fatal(err)
	}
	if got := s.recall(t, "ana", "Hi"); !strings.Contains(got, "Ana") {
		t.Fatalf("prompt section %q", got)
	}
	ms, _, err := s.mem.List(context.Background(), usermemory.Query{ProjectID: s.bot.ProjectID, BotID: s.bot.ID, UserUUID: "ana", Type: "semantic"}, paging.Page{Page: 1, PerPage: 10})
	if err != nil || len(ms) != 2 {
		t.Fatalf("%d memories, %v", len(ms), err)
	}
	for _, m := range ms {
		if strings.Contains(m.Content, "Ana") {
			if err := s.mem.Delete(context.Background(), s.bot.ProjectID, s.bot.ID, m.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := s.recall(t, "ana", "Hi"); strings.Contains(got, "Ana") || !strings.Contains(got, "tea") {
		t.Fatalf("prompt section after the deletion: %q", got)
	}
}

// A user keeps at most MaxPerUser memories: a new one beyond them replaces the least recently
// confirmed.
func TestMemoriesPerUserAreBounded(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for i := range usermemory.MaxPerUser + 1 {
		if err := s.said(t, "ana", "Remember that locker "+strconv.Itoa(i)+" is mine.", false); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.mem.Count(context.Background(), usermemory.Query{ProjectID: s.bot.ProjectID, BotID: s.bot.ID, UserUUID: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	got := s.contents(t, "ana")
	last := "semantic: The user asked to remember: locker " + strconv.Itoa(usermemory.MaxPerUser) + " is mine."
	if n != usermemory.MaxPerUser || len(got) != usermemory.MaxPerUser || slices.Contains(got, "semantic: The user asked to remember: locker 0 is mine.") || !slices.Contains(got, last) {
		t.Fatalf("%d memories stored, %d listed; locker 0 kept %v", n, len(got), slices.Contains(got, "semantic: The user asked to remember: locker 0 is mine."))
	}
}

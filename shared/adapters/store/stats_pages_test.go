package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/stats"
)

// hourFigures are the figures of the hour starting at statsMonday that the statistics read.
type hourFigures struct {
	Totals   stats.Totals
	Behavior stats.Behavior
	Votes    stats.Votes
}

func readHour(t *testing.T, db *mongo.Database) hourFigures {
	t.Helper()
	ctx, svc := context.Background(), stats.NewService(store.NewStats(db))
	w, err := stats.ParseWindow(statsMonday.Format(time.RFC3339), statsMonday.Add(59*time.Minute).Format(time.RFC3339), "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, err := svc.Summary(ctx, "p", "b", w)
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Behavior(ctx, "p", "b", w)
	if err != nil {
		t.Fatal(err)
	}
	v, err := svc.Votes(ctx, "p", "b", w)
	if err != nil {
		t.Fatal(err)
	}
	v.Stats.Worst = nil
	return hourFigures{Totals: s.Stats, Behavior: b.Stats, Votes: v.Stats}
}

// storedHours are the documents of the agent's hour starting at statsMonday, by id.
func storedHours(t *testing.T, db *mongo.Database) map[string]stats.Hourly {
	t.Helper()
	out := map[string]stats.Hourly{}
	err := store.NewStats(db).Hours(context.Background(), "p", "b", statsMonday, statsMonday.Add(time.Hour), func(h stats.Hourly) error {
		out[h.ID] = h
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// An hour of 5,000 chats is kept in pages of at most about PageChats chats each, its votes in
// the first, and reads back as exactly what was written, each event counted once however
// often it is delivered.
func TestStatsHourOfManyChatsIsPaged(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	h := newHistory(t, db)
	const chatsN, authorsN = 5000, 4000
	var created, voted []chats.Message
	perChat, chatsOf := map[string]int{}, map[string]map[string]bool{}
	var want hourFigures
	for i := range chatsN {
		chat := fmt.Sprintf("chat-%d", i)
		turns := 2 + i%3
		if i == 77 {
			turns = 9
		}
		for j := range turns {
			// A chat's user messages are by one author, then another; many write in several
			// chats.
			author := fmt.Sprintf("u%d", (i+j/2*1999)%authorsN)
			m := chats.Message{UUID: fmt.Sprintf("%s-%d", chat, j), ChatID: chat, Role: chats.RoleUser, User: chats.User{UUID: author},
				Tokens: 1 + (i+j)%13, CreditUsed: "0", EstimatedCost: "0", CreatedAt: statsMonday.Add(time.Duration(i%3600) * time.Second)}
			if j%2 == 1 {
				m.Role, m.User = chats.RoleAgent, chats.User{UUID: "bot"}
			} else {
				if chatsOf[author] == nil {
					chatsOf[author] = map[string]bool{}
				}
				chatsOf[author][chat] = true
				want.Totals.UserMessages++
			}
			created = append(created, m)
			perChat[chat]++
			want.Totals.Messages++
			want.Totals.Tokens += m.Tokens
			if j == 1 && i%10 == 0 {
				m.Upvotes, m.Downvotes = i%20/10, 1+i%30/10
				voted = append(voted, m)
				want.Votes.Upvotes += m.Upvotes
				want.Votes.Downvotes += m.Downvotes
				want.Votes.Rated++
			}
		}
	}
	want.Totals.AgentMessages = want.Totals.Messages - want.Totals.UserMessages
	want.Totals.Chats, want.Totals.Users = len(perChat), len(chatsOf)
	want.Behavior.Conversations, want.Behavior.Users = len(perChat), len(chatsOf)
	for _, n := range perChat {
		want.Behavior.LongestConversation = max(want.Behavior.LongestConversation, n)
	}
	for _, in := range chatsOf {
		if len(in) > 1 {
			want.Behavior.ReturningUsers++
		}
	}
	record := func() {
		h.seq = 0
		for i := 0; i < len(created); i += 500 {
			h.record(outbox.ChatMessageCreated, "b", created[i:min(i+500, len(created))]...)
		}
		h.record(outbox.ChatMessageUpdated, "b", voted...)
	}
	check := func(step string) {
		t.Helper()
		got := readHour(t, db)
		if got.Totals.Chats != want.Totals.Chats || got.Totals.Users != want.Totals.Users || got.Totals.Messages != want.Totals.Messages ||
			got.Totals.UserMessages != want.Totals.UserMessages || got.Totals.AgentMessages != want.Totals.AgentMessages ||
			got.Totals.Tokens != want.Totals.Tokens {
			t.Fatalf("%s: totals %+v, want %+v", step, got.Totals, want.Totals)
		}
		b := got.Behavior
		if b.Conversations != want.Behavior.Conversations || b.Users != want.Behavior.Users || b.ReturningUsers != want.Behavior.ReturningUsers ||
			b.LongestConversation != want.Behavior.LongestConversation || b.ByHour[0] != want.Totals.UserMessages {
			t.Fatalf("%s: behavior %+v, want %+v", step, b, want.Behavior)
		}
		v := got.Votes
		if v.Upvotes != want.Votes.Upvotes || v.Downvotes != want.Votes.Downvotes || v.Rated != want.Votes.Rated {
			t.Fatalf("%s: votes %+v, want %+v", step, v, want.Votes)
		}
	}
	record()
	check("recorded")
	if want.Behavior.ReturningUsers == 0 || want.Behavior.LongestConversation != 9 || want.Votes.Rated != 500 {
		t.Fatalf("the history is not the one meant: %+v, %+v", want.Behavior, want.Votes)
	}
	pages := storedHours(t, db)
	for id, p := range pages {
		if p.Start != statsMonday || p.BotID != "b" || p.ProjectID != "p" {
			t.Fatalf("page %s of the hour: %+v", id, p)
		}
		if len(p.Chats) > stats.PageChats+250 {
			t.Fatalf("page %s holds %d chats, more than %d and a batch's", id, len(p.Chats), stats.PageChats)
		}
	}
	first := pages[stats.PageID("b", statsMonday, 0)]
	if n := len(first.Pages) + 1; n < chatsN/stats.PageChats || len(pages) != n || len(first.Voted) != want.Votes.Rated {
		t.Fatalf("the hour is kept in %d documents, %d listed; the first holds %d votes", len(pages), n, len(first.Voted))
	}
	record()
	check("delivered again")
	if again := storedHours(t, db); !reflect.DeepEqual(again, pages) {
		t.Fatal("delivering the events again changed the pages")
	}
}

// An hour kept in one document before hours were paged still counts, its events are not
// counted again in its pages, and the votes of its messages that it holds stay in it.
func TestStatsUnpagedHourIsKept(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	ctx, h := context.Background(), newHistory(t, db)
	const sealed = 100
	old := stats.NewHourly("p", "b", statsMonday)
	old.Seq, old.Messages, old.UserMessages, old.AgentMessages, old.Tokens = sealed, 2, 1, 1, 5
	old.Chats["L"] = 2
	old.Authors["old"] = map[string]int{"L": 1}
	old.Modes["standard"] = 1
	old.Voted["L-2"] = stats.Vote{ChatID: "L", Role: chats.RoleAgent, Upvotes: 1, CreatedAt: statsMonday}
	if ok, err := store.NewStats(db).PutHour(ctx, old, 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	msg := func(chat string, n int, role, author string, up, down int) chats.Message {
		return chats.Message{UUID: fmt.Sprintf("%s-%d", chat, n), ChatID: chat, Role: role, User: chats.User{UUID: author}, Tokens: 10,
			Upvotes: up, Downvotes: down, CreatedAt: statsMonday.Add(time.Duration(n) * time.Minute)}
	}
	record := func() {
		// Events the unpaged hour already counts, delivered again, then the events after it.
		h.seq = sealed - 3
		h.record(outbox.ChatMessageCreated, "b", msg("L", 1, chats.RoleUser, "old", 0, 0), msg("L", 2, chats.RoleAgent, "bot", 0, 0),
			msg("L", 3, chats.RoleUser, "old", 0, 0))
		h.record(outbox.ChatMessageCreated, "b", msg("M", 1, chats.RoleUser, "new", 0, 0), msg("M", 2, chats.RoleAgent, "bot", 0, 0))
		h.record(outbox.ChatMessageUpdated, "b", msg("L", 2, chats.RoleAgent, "bot", 0, 1), msg("M", 2, chats.RoleAgent, "bot", 0, 2))
	}
	want := hourFigures{
		Totals: stats.Totals{Chats: 2, Messages: 4, UserMessages: 2, AgentMessages: 2, Users: 2, Tokens: 25, Versions: map[string]stats.VersionTotals{}},
		Votes:  stats.Votes{Downvotes: 3, Rated: 2},
	}
	for _, step := range []string{"recorded", "delivered again"} {
		record()
		got := readHour(t, db)
		got.Behavior = stats.Behavior{}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %+v, want %+v", step, got, want)
		}
		unpaged := storedHours(t, db)[old.ID]
		if unpaged.Sealed != sealed || unpaged.Messages != 2 || len(unpaged.Voted) != 1 || unpaged.Voted["L-2"].Downvotes != 1 {
			t.Fatalf("%s: the unpaged hour is %+v", step, unpaged)
		}
	}
	var page stats.Hourly
	if err := db.Collection("stat_hours").FindOne(ctx, bson.D{{Key: "_id", Value: stats.PageID("b", statsMonday, 0)}}).Decode(&page); err != nil ||
		page.Messages != 2 || page.Voted["M-2"].Downvotes != 2 {
		t.Fatalf("the hour's first page: %+v (%v)", page, err)
	}
}

// An hour begun in chat pages (before pages were by time) is kept in them to its end: its events
// delivered again are not counted twice, and the events after them go to the pages of their chats.
func TestStatsHourBegunInChatPagesKeepsThem(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	ctx, h := context.Background(), newHistory(t, db)
	msg := func(chat string, n int, role, author string, down int) chats.Message {
		return chats.Message{UUID: fmt.Sprintf("%s-%d", chat, n), ChatID: chat, Role: role, User: chats.User{UUID: author}, Tokens: 10,
			Downvotes: down, CreatedAt: statsMonday.Add(time.Duration(n) * time.Minute)}
	}
	// The chat page of L, as the recorder wrote it before, with L's first two messages.
	const written = 2
	old := stats.NewHourly("p", "b", statsMonday)
	old.ID, old.Seq, old.Messages, old.UserMessages, old.AgentMessages, old.Tokens = stats.ChatPageID("b", statsMonday, "L"), written, 2, 1, 1, 20
	old.Chats["L"] = 2
	old.Authors["old"] = map[string]int{"L": 1}
	old.Modes["standard"] = 1
	if ok, err := store.NewStats(db).PutHour(ctx, old, 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := hourFigures{
		Totals: stats.Totals{Chats: 2, Messages: 5, UserMessages: 3, AgentMessages: 2, Users: 2, Tokens: 50, Versions: map[string]stats.VersionTotals{}},
		Votes:  stats.Votes{Downvotes: 3, Rated: 2},
	}
	for _, step := range []string{"recorded", "delivered again"} {
		h.seq = 0
		h.record(outbox.ChatMessageCreated, "b", msg("L", 1, chats.RoleUser, "old", 0), msg("L", 2, chats.RoleAgent, "bot", 0),
			msg("L", 3, chats.RoleUser, "old", 0))
		h.record(outbox.ChatMessageCreated, "b", msg("M", 1, chats.RoleUser, "new", 0), msg("M", 2, chats.RoleAgent, "bot", 0))
		h.record(outbox.ChatMessageUpdated, "b", msg("L", 2, chats.RoleAgent, "bot", 1), msg("M", 2, chats.RoleAgent, "bot", 2))
		got := readHour(t, db)
		got.Behavior = stats.Behavior{}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %+v, want %+v", step, got, want)
		}
		docs := storedHours(t, db)
		if len(docs) != 2 || docs[stats.ChatPageID("b", statsMonday, "L")].Messages != 3 || docs[stats.ChatPageID("b", statsMonday, "M")].Messages != 2 {
			t.Fatalf("%s: the hour is kept in %v", step, slices.Collect(maps.Keys(docs)))
		}
	}
}

// A recorder that keeps the pages it wrote does not write over a page another recorder wrote
// since: a batch folded by each of two recorders in turn is counted, every one.
func TestStatsRecordersTakingTurnsCountEveryBatch(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	h := newHistory(t, db)
	tail := func(context.Context, uint64, time.Time, func(context.Context, []stats.Delivery) error) error {
		return nil
	}
	recorders := []*stats.Recorder{h.recorder,
		stats.NewRecorder(store.NewStats(db), store.NewAgents(db), store.NewChats(db), tail, "other", time.Now(), slog.New(slog.DiscardHandler))}
	want := hourFigures{Totals: stats.Totals{Versions: map[string]stats.VersionTotals{}}}
	for turn := range 6 {
		h.recorder = recorders[turn%2]
		// Each batch is a chat of its own in the same hour: one page.
		chat := fmt.Sprint("turn-", turn)
		h.record(outbox.ChatMessageCreated, "b",
			chats.Message{UUID: chat + "-1", ChatID: chat, Role: chats.RoleUser, User: chats.User{UUID: chat}, Tokens: 1 + turn, CreatedAt: statsMonday},
			chats.Message{UUID: chat + "-2", ChatID: chat, Role: chats.RoleAgent, User: chats.User{UUID: "bot"}, Tokens: 1, CreatedAt: statsMonday.Add(time.Second)})
		want.Totals.Chats++
		want.Totals.Users++
		want.Totals.Messages += 2
		want.Totals.UserMessages++
		want.Totals.AgentMessages++
		want.Totals.Tokens += 2 + turn
	}
	got := readHour(t, db)
	got.Behavior, got.Votes = stats.Behavior{}, stats.Votes{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if docs := storedHours(t, db); len(docs) != 1 {
		t.Fatalf("the hour is kept in %d pages", len(docs))
	}
}

// A recorder that stopped between listing the hour's next page and writing it leaves the events
// before the page's start to the pages they were counted in: delivered again, none counts twice.
func TestStatsNextPageListedButNotWritten(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	ctx, h := context.Background(), newHistory(t, db)
	msg := func(chat string, n int) chats.Message {
		return chats.Message{UUID: fmt.Sprintf("%s-%d", chat, n), ChatID: chat, Role: chats.RoleUser, User: chats.User{UUID: "u"}, Tokens: 1,
			CreatedAt: statsMonday.Add(time.Duration(n) * time.Minute)}
	}
	h.record(outbox.ChatMessageCreated, "b", msg("A", 1), msg("A", 2))
	first := storedHours(t, db)[stats.PageID("b", statsMonday, 0)]
	listed := first
	listed.Pages, listed.Seq = []uint64{3}, 3
	if ok, err := store.NewStats(db).PutHour(ctx, listed, first.Seq); err != nil || !ok {
		t.Fatal(ok, err)
	}
	h.seq = 0
	h.record(outbox.ChatMessageCreated, "b", msg("A", 1), msg("A", 2), msg("B", 3), msg("B", 4))
	if got := readHour(t, db).Totals; got.Messages != 4 || got.Chats != 2 {
		t.Fatalf("%+v, want 4 messages in 2 chats", got)
	}
	if second := storedHours(t, db)[stats.PageID("b", statsMonday, 1)]; second.Messages != 2 || second.Chats["B"] != 2 {
		t.Fatalf("the second page: %+v", second)
	}
}

package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
)

// The environment of the second process of TestSameQuestionsSamePassages: the database, the
// agent it asks, and the file it writes the passages to.
const (
	askDBEnv    = "MEMORY_TEST_ASK_DB"
	askBotEnv   = "MEMORY_TEST_ASK_BOT"
	askAnswerTo = "MEMORY_TEST_ASK_ANSWER_TO"
)

// tieDocs are documents whose passages tie for the questions of tieQuestions: the same words
// of the questions, as many times, in passages of as many words.
var tieDocs = func() [][]string {
	var docs [][]string
	for i, w := range []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"} {
		docs = append(docs, []string{
			fmt.Sprintf("Descale the kettle with %s vinegar.", w),
			fmt.Sprintf("The warranty covers the %s heating plate for two years.", w),
			fmt.Sprintf("Store the %s filter in a dry place, model %d.", w, i),
		})
	}
	return docs
}()

var tieQuestions = []string{"how do I descale the kettle", "warranty of the heating plate", "where to store the filter", "vinegar"}

// askAll asks every question of tieQuestions of the agent's memory, with a fresh Memory (and so
// a fresh index), and returns each one's passages as "source title #position: text".
func askAll(t *testing.T, m *memory.Memory, bot string) [][]string {
	t.Helper()
	var out [][]string
	for _, q := range tieQuestions {
		res, err := m.Search(context.Background(), memory.Query{ProjectID: "p", BotID: bot, Text: q, Top: 5})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range res {
			got = append(got, fmt.Sprintf("%s #%d: %s", p.Source.Title, p.Position, p.Text))
		}
		out = append(out, got)
	}
	return out
}

func newMemory(db string) (*memory.Memory, error) {
	d, err := store.Open(testenv.MongoURI(), db, nil)
	if err != nil {
		return nil, err
	}
	return memory.New(store.NewMemory(d), nil, 1<<30, slog.New(slog.NewTextHandler(io.Discard, nil))), nil
}

// The same questions over the same documents get the same passages, in the same order, though
// the documents were stored twice, in opposite orders (so under other ids, which order them
// otherwise), and asked in two processes; many of their passages tie.
func TestSameQuestionsSamePassages(t *testing.T) {
	if db := os.Getenv(askDBEnv); db != "" {
		m, err := newMemory(db)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(askAll(t, m, os.Getenv(askBotEnv)))
		if err := os.WriteFile(os.Getenv(askAnswerTo), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	db := testenv.Mongo(t)
	repo := store.NewSources(db)
	ctx := context.Background()
	put := func(bot string, order []int) {
		for _, i := range order {
			id := bson.NewObjectID().Hex()
			s := sources.Source{ID: id, UUID: id, ProjectID: "p", BotID: bot, Title: fmt.Sprintf("Manual %d", i), Type: sources.TypeText,
				Status: sources.StatusProcessing, Tags: []string{}, Links: []sources.Link{}}
			if err := repo.Insert(ctx, s, outbox.New(ctx, outbox.SourceCreated, "p", bot, struct{}{})); err != nil {
				t.Fatal(err)
			}
			ingest(t, repo, s, "g1", tieDocs[i]...)
		}
	}
	var order []int
	for i := range tieDocs {
		order = append(order, i)
	}
	put("first", order)
	slices.Reverse(order)
	put("second", order)

	m, err := newMemory(db.Name())
	if err != nil {
		t.Fatal(err)
	}
	here := askAll(t, m, "first")
	for i, q := range tieQuestions {
		if len(here[i]) != 5 {
			t.Fatalf("%q: %d passages, want 5: %v", q, len(here[i]), here[i])
		}
	}

	answers := filepath.Join(t.TempDir(), "answers.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSameQuestionsSamePassages$", "-test.count=1")
	cmd.Env = append(os.Environ(), askDBEnv+"="+db.Name(), askBotEnv+"=second", askAnswerTo+"="+answers,
		"AGENTPLANE_MONGO_URI="+testenv.MongoURI(), "AGENTPLANE_REDIS_URL="+testenv.RedisURL())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the second process: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(answers)
	if err != nil {
		t.Fatal(err)
	}
	var there [][]string
	if err := json.Unmarshal(raw, &there); err != nil {
		t.Fatal(err)
	}
	for i, q := range tieQuestions {
		if !slices.Equal(here[i], there[i]) {
			t.Errorf("%q:\n here  %s\n there %s", q, strings.Join(here[i], " | "), strings.Join(there[i], " | "))
		}
	}
}

package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// The passages of the two sources the tests below give their agents, and a question both answer.
const (
	opensText  = "The shop opens at nine in the morning."
	closesText = "The shop closes at six in the evening."
	hoursAsked = "When does the shop open and close?"
)

// sourcesAgent is an agent answering standard turns through the fake provider (its version 2,
// published), its memory ingested by a worker; versioned when versioning says so.
func sourcesAgent(t *testing.T, versioning bool) (versionsAPI, *providertest.Server) {
	t.Helper()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	b.startWorker(t, workerOptions{})
	a := b.versionedBot(t, map[string]any{"instruction": "Answer from memory.", "provider_key": "k", "reasoning_type": "standard"})
	a.update(t, map[string]any{"versioning": versioning})
	return a, fake
}

// recalls asks the agent (body names the version, or not) and returns which of the two sources'
// passages the provider was shown.
func (v versionsAPI) recalls(t *testing.T, fake *providertest.Server, body map[string]any) []string {
	t.Helper()
	before := len(systemPrompts(fake))
	body["message"] = hoursAsked
	if res, chat := v.chat(t, body); chat == nil {
		t.Fatalf("chat: %d %s", res.Status, res.Body)
	}
	prompts := systemPrompts(fake)[before:]
	if len(prompts) != 1 {
		t.Fatalf("the provider got %q", prompts)
	}
	return recalled(prompts[0])
}

// recalled names the two sources whose passages text holds, in order.
func recalled(text string) []string {
	got := []string{}
	for name, passage := range map[string]string{"opens": opensText, "closes": closesText} {
		if strings.Contains(text, passage) {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	return got
}

// evalRecalls runs an eval of one case (the hours asked) against the agent's version and
// returns which sources' passages the provider was shown for it.
func (v versionsAPI) evalRecalls(t *testing.T, fake *providertest.Server, version string) []string {
	t.Helper()
	e := evalsAPI{b: v.b, bot: v.botID}
	res := e.create(t, "Hours "+version, []any{map[string]any{"input": hoursAsked, "expected_facts": []any{"nine"}}})
	expect(t, res, http.StatusOK, "")
	before := len(systemPrompts(fake))
	e.finished(t, e.run(t, map[string]any{"dataset_id": res.JSON(t)["dataset"].(map[string]any)["uuid"], "version": version}))
	prompts := systemPrompts(fake)[before:]
	if len(prompts) != 1 {
		t.Fatalf("the provider got %q", prompts)
	}
	return recalled(prompts[0])
}

// sourcesChange is the change of the set of sources among a version's (or a diff's) changes:
// nil when there is none.
func sourcesChange(changes []any) map[string]any {
	for _, c := range changes {
		if c := c.(map[string]any); c["field"] == "sources" {
			return c
		}
	}
	return nil
}

// ids are the strings of a JSON list (none for nil).
func ids(list any) []string {
	out := []string{}
	for _, id := range asList(list) {
		out = append(out, id.(string))
	}
	return out
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return nil
}

// wantSourcesChange checks the change of sources of a version's or a diff's changes.
func wantSourcesChange(t *testing.T, what string, changes []any, added, removed []string) {
	t.Helper()
	c := sourcesChange(changes)
	if c == nil || !slices.Equal(ids(c["added"]), added) || !slices.Equal(ids(c["removed"]), removed) ||
		c["added_count"] != nil && c["added_count"] != float64(len(added)) || c["removed_count"] != nil && c["removed_count"] != float64(len(removed)) {
		t.Fatalf("%s: the change of sources %v, want added %v removed %v (changes %v)", what, c, added, removed, changes)
	}
}

// A versioned agent's sources are part of its versions: a source created is in the draft, not
// in what end users get (nor an eval run of the published version), until the draft is published; a rollback makes the set the earlier
// version's (a source added since no longer answers); a source deleted answers no version,
// even one whose set has it; each version's changes, and a diff of two, name the sources added
// and removed.
func TestVersionedAgentAnswersFromItsVersionsSources(t *testing.T) {
	t.Parallel()
	a, fake := sourcesAgent(t, true)
	opens := a.ingest(t, map[string]any{"title": "Opening", "type": "text", "source": opensText})["id"].(string)
	bot := a.do(t, http.MethodGet, "/v1/bot/read", nil, http.StatusOK, "")["bot"].(map[string]any)
	if bot["version"] != float64(3) || bot["published_version"] != float64(2) {
		t.Fatalf("after a source's creation %v", bot)
	}
	third := a.version(t, "3")
	wantSourcesChange(t, "version 3", third["changes"].([]any), []string{opens}, nil)
	if s := third["config"].(map[string]any)["sources"].(map[string]any); s["count"] != float64(1) || len(s["digest"].(string)) != 64 {
		t.Fatalf("version 3's sources %v", s)
	}
	read := a.do(t, http.MethodGet, "/v1/bot/version/read?version=3", nil, http.StatusOK, "")["sources"].(map[string]any)
	if !slices.Equal(ids(read["ids"]), []string{opens}) || read["total"] != float64(1) {
		t.Fatalf("version 3 read's sources %v", read)
	}
	if got := a.recalls(t, fake, map[string]any{}); len(got) != 0 {
		t.Fatalf("the published version recalled %v before the source was published", got)
	}
	if got := a.recalls(t, fake, map[string]any{"version": "draft"}); !slices.Equal(got, []string{"opens"}) {
		t.Fatalf("the draft recalled %v", got)
	}
	if got := a.evalRecalls(t, fake, "published"); len(got) != 0 {
		t.Fatalf("an eval run of the published version recalled %v", got)
	}
	if got := a.evalRecalls(t, fake, "draft"); !slices.Equal(got, []string{"opens"}) {
		t.Fatalf("an eval run of the draft recalled %v", got)
	}
	a.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	if got := a.recalls(t, fake, map[string]any{}); !slices.Equal(got, []string{"opens"}) {
		t.Fatalf("after publishing, the agent recalled %v", got)
	}

	closes := a.ingest(t, map[string]any{"title": "Closing", "type": "text", "source": closesText})["id"].(string)
	a.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	if got := a.recalls(t, fake, map[string]any{}); !slices.Equal(got, []string{"closes", "opens"}) {
		t.Fatalf("version 4 recalled %v", got)
	}
	diff := a.do(t, http.MethodGet, "/v1/bot/version/diff?from=3&to=4", nil, http.StatusOK, "")["diff"].(map[string]any)
	wantSourcesChange(t, "the diff of 3 and 4", diff["changes"].([]any), []string{closes}, nil)

	bot = a.do(t, http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": 3}, http.StatusOK, "")["bot"].(map[string]any)
	if bot["published_version"] != float64(5) {
		t.Fatalf("after the rollback %v", bot)
	}
	if got := a.recalls(t, fake, map[string]any{}); !slices.Equal(got, []string{"opens"}) {
		t.Fatalf("after the rollback to version 3, the agent recalled %v", got)
	}
	wantSourcesChange(t, "version 5", a.version(t, "5")["changes"].([]any), nil, []string{closes})
	if d := a.do(t, http.MethodGet, "/v1/bot/version/diff?from=3&to=5", nil, http.StatusOK, "")["diff"].(map[string]any); len(d["changes"].([]any)) != 0 {
		t.Fatalf("versions 3 and 5 differ: %v", d)
	}

	expect(t, a.b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/source/delete?" + a.query("&source_id="+opens), Key: a.b.key}),
		http.StatusOK, "")
	wantSourcesChange(t, "version 6", a.version(t, "6")["changes"].([]any), nil, []string{opens})
	if got := a.recalls(t, fake, map[string]any{}); len(got) != 0 {
		t.Fatalf("the published version 5 recalled %v after its source was deleted", got)
	}
	if got := a.recalls(t, fake, map[string]any{"version": 4}); !slices.Equal(got, []string{"closes"}) {
		t.Fatalf("version 4 recalled %v after one of its sources was deleted", got)
	}
}

// An agent without versioning answers from a source as soon as it is ready (its creation is
// published at once); a rollback to a version before it stops it answering; a reset makes a
// version without any source, and a rollback past it restores none of the deleted ones.
func TestUnversionedAgentAnswersFromANewSourceAtOnce(t *testing.T) {
	t.Parallel()
	a, fake := sourcesAgent(t, false)
	opens := a.ingest(t, map[string]any{"title": "Opening", "type": "text", "source": opensText})["id"].(string)
	if got := a.recalls(t, fake, map[string]any{}); !slices.Equal(got, []string{"opens"}) {
		t.Fatalf("the new source: recalled %v", got)
	}
	wantSourcesChange(t, "version 3", a.version(t, "published")["changes"].([]any), []string{opens}, nil)
	a.do(t, http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": 2}, http.StatusOK, "")
	if got := a.recalls(t, fake, map[string]any{}); len(got) != 0 {
		t.Fatalf("after the rollback to version 2, the agent recalled %v", got)
	}
	closes := a.ingest(t, map[string]any{"title": "Closing", "type": "text", "source": closesText})["id"].(string)
	if got := a.recalls(t, fake, map[string]any{}); !slices.Equal(got, []string{"closes"}) {
		t.Fatalf("version 5 recalled %v", got)
	}
	bot := a.do(t, http.MethodPost, "/v1/bot/reset", map[string]any{}, http.StatusOK, "")["bot"].(map[string]any)
	if bot["version"] != float64(6) || bot["published_version"] != float64(6) {
		t.Fatalf("after the reset %v", bot)
	}
	sixth := a.version(t, "6")
	wantSourcesChange(t, "version 6", sixth["changes"].([]any), nil, []string{closes})
	if n := sixth["config"].(map[string]any)["sources"].(map[string]any)["count"]; n != float64(0) {
		t.Fatalf("version 6 has %v sources", n)
	}
	// A rollback to a version whose source was deleted since does not bring it back.
	a.do(t, http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": 5}, http.StatusOK, "")
	seventh := a.version(t, "7")
	if n := seventh["config"].(map[string]any)["sources"].(map[string]any)["count"]; n != float64(0) || sourcesChange(seventh["changes"].([]any)) != nil {
		t.Fatalf("the rollback to version 5 after the reset: %v", seventh)
	}
	if got := a.recalls(t, fake, map[string]any{}); len(got) != 0 {
		t.Fatalf("after the rollback to version 5, the agent recalled %v", got)
	}
}

// Eight sources created at once on one agent make versions 2..9, no number missing or taken
// twice, each adding its source; the newest holds all eight.
func TestVersionsOfConcurrentSourceCreatesAreGapFree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.versionedBot(t, map[string]any{"versioning": true})
	const n = 8
	created := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/source/create", Key: b.key,
				Body: a.body(map[string]any{"title": fmt.Sprintf("Note %d", i), "type": "text", "source": fmt.Sprintf("Note number %d.", i)})})
			if res.Status != http.StatusOK {
				t.Errorf("source %d: %d %s", i, res.Status, res.Body)
				return
			}
			created[i] = res.JSON(t)["source"].(map[string]any)["id"].(string)
		})
	}
	wg.Wait()
	list := a.versions(t, "?per_page=50")
	var numbers []int
	var added []string
	for _, raw := range list["versions"].([]any) {
		v := raw.(map[string]any)
		numbers = append(numbers, int(v["version"].(float64)))
		if v["version"] == float64(1) {
			continue
		}
		c := sourcesChange(v["changes"].([]any))
		if c == nil || len(ids(c["added"])) != 1 || c["removed"] != nil {
			t.Fatalf("version %v changes %v", v["version"], v["changes"])
		}
		added = append(added, ids(c["added"])...)
	}
	if want := []int{9, 8, 7, 6, 5, 4, 3, 2, 1}; !slices.Equal(numbers, want) {
		t.Fatalf("version numbers %v, want %v", numbers, want)
	}
	slices.Sort(added)
	slices.Sort(created)
	if !slices.Equal(added, created) {
		t.Fatalf("the versions added %v, the sources created are %v", added, created)
	}
	draft := a.do(t, http.MethodGet, "/v1/bot/version/read?version=draft", nil, http.StatusOK, "")
	if got := ids(draft["sources"].(map[string]any)["ids"]); !slices.Equal(got, created) {
		t.Fatalf("the newest version's sources %v, want %v", got, created)
	}
}

// An agent run searches the memory of the version it answers as: the published version's run
// does not find a source the draft added, the draft's does.
func TestAgentRunSearchesItsVersionsSources(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, nil)
	a := versionsAPI{c}
	a.update(t, map[string]any{"versioning": true})
	a.ingest(t, map[string]any{"title": "Opening", "type": "text", "source": opensText})
	searched := func(t *testing.T, body map[string]any) []string {
		t.Helper()
		fake.Set(providertest.Behavior{Script: []providertest.Turn{call("search_memory", `{"query":"When does the shop open?"}`), {Reply: "Done."}}})
		body["message"], body["reasoning_mode"] = "When does the shop open?", "agent"
		res, chat := c.chat(t, body)
		if chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		cs := cycles(t, chat)
		if len(cs) != 1 || cs[0]["action"] != "search_memory" {
			t.Fatalf("the run's cycles %v", cs)
		}
		return recalled(cs[0]["observation"].(string))
	}
	if got := searched(t, map[string]any{}); len(got) != 0 {
		t.Fatalf("the published version's run found %v", got)
	}
	if got := searched(t, map[string]any{"version": "draft"}); !slices.Equal(got, []string{"opens"}) {
		t.Fatalf("the draft's run found %v", got)
	}
}

// The MCP door's memory search is the published version's: a source the draft added is found
// once the draft is published.
func TestAgentMCPSearchesThePublishedSources(t *testing.T) {
	t.Parallel()
	b, c, _ := agentSetup(t, nil)
	a := versionsAPI{c}
	a.update(t, map[string]any{"versioning": true})
	a.ingest(t, map[string]any{"title": "Opening", "type": "text", "source": opensText})
	cs, err := connectMCP(t, b, "/mcp/agents/"+a.botID, b.key)
	if err != nil {
		t.Fatal(err)
	}
	search := func(t *testing.T) []string {
		t.Helper()
		found, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_memory", Arguments: map[string]any{"query": "when does the shop open"}})
		if err != nil || found.IsError {
			t.Fatalf("search: %+v, %v", found, err)
		}
		if len(found.Content) == 0 {
			return recalled("")
		}
		return recalled(found.Content[0].(*mcp.TextContent).Text)
	}
	if got := search(t); len(got) != 0 {
		t.Fatalf("the published version's search found %v", got)
	}
	a.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	if got := search(t); !slices.Equal(got, []string{"opens"}) {
		t.Fatalf("after publishing, the search found %v", got)
	}
}

package eval

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/memory/index"
	"github.com/agentplane/agentplane/shared/memory/text"
)

var update = flag.Bool("update", false, "write the report into docs/QUALITY.md")

// Splits of the questions: ranking may be tuned on the first, and is judged on the second.
const (
	tune    = "tune"
	heldout = "heldout"
)

// floors hold retrieval quality a little below the values measured on each split (see the
// report in docs/QUALITY.md), so that a regression of extraction, chunking, analysis or
// ranking fails the build.
var floors = map[string]struct{ recall, mrr, cite float64 }{
	tune:    {recall: 0.80, mrr: 0.60, cite: 0.70}, // measured 0.837, 0.633, 0.732
	heldout: {recall: 0.75, mrr: 0.50, cite: 0.58}, // measured 0.785, 0.527, 0.616
}

const (
	minQuestions = 150
	minDocs      = 6
	// searchTop is how deep each question is searched: MRR counts the answer down to it.
	searchTop = 10
	// recallAt is the rank an answer must reach to count as recalled.
	recallAt = 5
	// maxAnswerPassages is how many passages an answer may lie in: two when it falls in the
	// overlap of consecutive chunks, more means it does not point at one passage.
	maxAnswerPassages = 2
	// citeTop is how many passages a chat turn gives the model: an agent's default top.
	citeTop = agents.DefaultTop
	// latencyRounds is how many times every question is searched to measure latency.
	latencyRounds = 5
	// qualityPath is the report -update writes, between reportBegin and reportEnd.
	qualityPath = "../../../docs/QUALITY.md"
	reportBegin = "<!-- report: written by TestRetrievalEval -update; do not edit by hand -->"
	reportEnd   = "<!-- end of report -->"
)

// document is one entry of testdata/docs.json.
type document struct {
	File    string `json:"file"`
	Kind    string `json:"kind"`
	Title   string `json:"title"`
	Source  string `json:"source"`
	License string `json:"license"`
}

// question is one entry of testdata/questions.json: a question in a user's words about one
// document, and verbatim substrings of that document, each inside a passage that answers it.
type question struct {
	ID       string   `json:"id"`
	Doc      string   `json:"doc"`
	Split    string   `json:"split"`
	Question string   `json:"question"`
	Answers  []string `json:"answers"`
}

// passage is one chunk of a document, as ingestion stores it.
type passage struct {
	id, doc string
	text    string // white space collapsed, for matching answers
	// shown is the passage as memory.Search answers it, the way a chat turn shows it to the model.
	shown memory.Passage
}

// corpus is the documents chunked and indexed one segment per document, as memory holds one
// segment per source.
type corpus struct {
	docs     []document
	passages map[string]passage
	perDoc   map[string]int
	segs     []*index.Segment
}

// result is how one question fared.
type result struct {
	q     question
	rank  int    // 1-based rank of the first answering passage; 0 when not in the top searchTop
	first string // id of the passage ranked first, "" when nothing matched
	// cited is whether the offline model's answer over the first citeTop passages cites an
	// answering one; meaningful only when one of them answers (0 < rank <= citeTop).
	cited bool
}

// flatten collapses runs of white space, so answers match whatever the line wrapping.
func flatten(s string) string { return strings.Join(strings.Fields(s), " ") }

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// loadCorpus reads the documents of testdata/docs.json and chunks each one the way ingestion
// does a document fetched from a URL ending in its file name: text.Extract picks the
// extractor from the extension (HTML, Markdown or plain text), text.Split with the default
// options and the page's headings cuts the text into passages, each indexed under its page
// title and section path as memory.Chunk does.
func loadCorpus(t *testing.T) corpus {
	t.Helper()
	c := corpus{passages: map[string]passage{}, perDoc: map[string]int{}}
	readJSON(t, "testdata/docs.json", &c.docs)
	files, err := filepath.Glob("testdata/docs/*")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, d := range c.docs {
		listed = append(listed, filepath.Join("testdata/docs", d.File))
	}
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Fatalf("testdata/docs holds %v, testdata/docs.json lists %v", files, listed)
	}
	if len(c.docs) < minDocs {
		t.Fatalf("%d documents, want at least %d", len(c.docs), minDocs)
	}
	for _, d := range c.docs {
		raw, err := os.ReadFile(filepath.Join("testdata/docs", d.File))
		if err != nil {
			t.Fatal(err)
		}
		page, _, err := text.Extract(raw, "", &url.URL{Path: "/" + d.File})
		if err != nil {
			t.Fatalf("extracting %s: %v", d.File, err)
		}
		var docs []index.Doc
		for _, ch := range text.Split(page.Text, text.ChunkOptions{Headings: page.Headings}) {
			id := fmt.Sprintf("%s#%02d", d.File, ch.Position)
			docs = append(docs, index.Doc{ID: id, Text: ch.Text, Title: strings.TrimSpace(page.Title + " " + ch.Section)})
			c.passages[id] = passage{id: id, doc: d.File, text: flatten(ch.Text), shown: memory.Passage{ChunkID: id,
				Text: ch.Text, Position: ch.Position, PageTitle: page.Title, Section: ch.Section, Source: memory.Ref{Title: d.Title}}}
		}
		c.perDoc[d.File] = len(docs)
		c.segs = append(c.segs, index.NewSegment(docs))
	}
	return c
}

// loadQuestions reads testdata/questions.json and checks that it is an evaluation set worth
// trusting: enough questions, known documents and splits, unique ids, each document's
// questions split in halves, and every answer pointing at one or two passages of its document.
func loadQuestions(t *testing.T, c corpus) []question {
	t.Helper()
	var qs []question
	readJSON(t, "testdata/questions.json", &qs)
	if len(qs) < minQuestions {
		t.Fatalf("%d questions, want at least %d", len(qs), minQuestions)
	}
	seen := map[string]bool{}
	splits := map[string]map[string]int{}
	for _, q := range qs {
		switch {
		case seen[q.ID]:
			t.Errorf("question id %s is repeated", q.ID)
		case c.perDoc[q.Doc] == 0:
			t.Errorf("%s is about %q, which is not a document", q.ID, q.Doc)
		case q.Split != tune && q.Split != heldout:
			t.Errorf("%s: split %q, want %q or %q", q.ID, q.Split, tune, heldout)
		case strings.TrimSpace(q.Question) == "" || len(q.Answers) == 0:
			t.Errorf("%s has no question or no answer", q.ID)
		}
		seen[q.ID] = true
		if splits[q.Doc] == nil {
			splits[q.Doc] = map[string]int{}
		}
		splits[q.Doc][q.Split]++
		for _, a := range q.Answers {
			if n := len(c.answering(q.Doc, []string{a})); n == 0 || n > maxAnswerPassages {
				t.Errorf("%s: answer %q lies in %d passages of %s, want 1 to %d", q.ID, a, n, q.Doc, maxAnswerPassages)
			}
		}
	}
	for _, d := range c.docs {
		n := splits[d.File]
		if n[tune] == 0 || n[tune]-n[heldout] > 1 || n[heldout]-n[tune] > 1 {
			t.Errorf("%s has %d tuning and %d held-out questions, want halves", d.File, n[tune], n[heldout])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return qs
}

// answering returns the ids of the passages of doc that contain one of answers.
func (c corpus) answering(doc string, answers []string) []string {
	var ids []string
	for id, p := range c.passages {
		if p.doc != doc {
			continue
		}
		for _, a := range answers {
			if strings.Contains(p.text, flatten(a)) {
				ids = append(ids, id)
				break
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// ask searches one question lexically, finds the rank of its first answering passage and, when
// one of the first citeTop answers, whether the offline model cites it.
func (c corpus) ask(t *testing.T, q question) result {
	want := c.answering(q.Doc, q.Answers)
	r := result{q: q}
	var shown []memory.Passage
	for i, h := range c.search(q.Question) {
		if i == 0 {
			r.first = h.ID
		}
		if r.rank == 0 && slices.Contains(want, h.ID) {
			r.rank = i + 1
		}
		if i < citeTop {
			p := c.passages[h.ID].shown
			p.Score = h.Score
			shown = append(shown, p)
		}
	}
	if r.rank > 0 && r.rank <= citeTop {
		r.cited = cites(t, q.Question, shown, want)
	}
	return r
}

// cites answers question with the offline model as a chat turn does when no provider is
// configured (chats.Prompt over the passages, chats.Citations of the reply) and reports whether
// the reply cites one of the passages want.
func cites(t *testing.T, question string, passages []memory.Passage, want []string) bool {
	req := llm.Request{Messages: chats.Prompt(chats.Input{}, agents.Bot{}, nil, passages, "", question), Passages: passages}
	rep, err := provider.NewOffline().Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range chats.Citations(rep.Content, passages) {
		if slices.Contains(want, passages[ref.CitationNumber-1].ChunkID) {
			return true
		}
	}
	return false
}

// search returns the searchTop passages for question as memory.Search ranks them: lexically,
// near-duplicates collapsed (memory.Distinct).
func (c corpus) search(question string) []index.Hit {
	return memory.Distinct(c.segs, index.Query{Text: question, Top: searchTop}, func(id string) (string, bool) {
		p, ok := c.passages[id]
		return p.shown.Text, ok
	})
}

// score is recall@recallAt and MRR@searchTop over a set of results, and how often the offline
// model cited the answering passage when it was among the citeTop it was given.
type score struct {
	n           int
	recall, mrr float64
	shown       int     // questions whose answering passage was among the first citeTop
	cite        float64 // share of those whose answer cites it
}

func scoreOf(rs []result) score {
	s := score{n: len(rs)}
	for _, r := range rs {
		if r.rank > 0 && r.rank <= recallAt {
			s.recall++
		}
		if r.rank > 0 {
			s.mrr += 1 / float64(r.rank)
		}
		if r.rank > 0 && r.rank <= citeTop {
			s.shown++
			if r.cited {
				s.cite++
			}
		}
	}
	if s.n > 0 {
		s.recall /= float64(s.n)
		s.mrr /= float64(s.n)
	}
	if s.shown > 0 {
		s.cite /= float64(s.shown)
	}
	return s
}

// latency searches every question latencyRounds times and returns the median and 99th
// percentile time of one search.
func (c corpus) latency(qs []question) (p50, p99 time.Duration) {
	var ds []time.Duration
	for range latencyRounds {
		for _, q := range qs {
			start := time.Now()
			c.search(q.Question)
			ds = append(ds, time.Since(start))
		}
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)*99/100]
}

// TestRetrievalEval measures lexical retrieval (BM25, no embeddings) on the evaluation set and
// holds each split to its floor. With -update it writes the report into docs/QUALITY.md.
func TestRetrievalEval(t *testing.T) {
	c := loadCorpus(t)
	qs := loadQuestions(t, c)
	var results []result
	for _, q := range qs {
		results = append(results, c.ask(t, q))
	}
	p50, p99 := c.latency(qs)
	report := c.report(results, p50, p99)
	t.Log("\n" + report)
	for _, split := range []string{tune, heldout} {
		s := scoreOf(filter(results, func(r result) bool { return r.q.Split == split }))
		f := floors[split]
		if s.recall < f.recall {
			t.Errorf("%s: recall@%d %.3f is below the floor %.2f", split, recallAt, s.recall, f.recall)
		}
		if s.mrr < f.mrr {
			t.Errorf("%s: MRR %.3f is below the floor %.2f", split, s.mrr, f.mrr)
		}
		if s.cite < f.cite {
			t.Errorf("%s: the offline model cites the answering passage for %.3f of the questions, below the floor %.2f", split, s.cite, f.cite)
		}
	}
	if *update {
		writeReport(t, report)
		return
	}
	if committed := committedReport(t); withoutLatency(committed) != withoutLatency(report) {
		t.Errorf("%s does not hold what this run measured: run go test ./shared/memory/eval -run TestRetrievalEval -count=1 -update", qualityPath)
	}
}

// withoutLatency drops the latency section from a report: it depends on the machine, the
// rest is reproduced exactly by every run.
func withoutLatency(report string) string {
	head, rest, _ := strings.Cut(report, "### Latency")
	_, tail, _ := strings.Cut(rest, "### Misses")
	return head + tail
}

func filter(rs []result, keep func(result) bool) []result {
	var out []result
	for _, r := range rs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// report renders the measurements as the Markdown of docs/QUALITY.md's report section.
func (c corpus) report(results []result, p50, p99 time.Duration) string {
	var b strings.Builder
	split := func(s string) func(result) bool { return func(r result) bool { return r.q.Split == s } }
	fmt.Fprintf(&b, "%d questions (%d tuning, %d held-out) over %d documents cut into %d passages "+
		"(text.Split defaults: at most 400 tokens, 60 of overlap), one segment per document, each "+
		"passage indexed with its page title and section path as its title. "+
		"Lexical ranking only (BM25, no embeddings), near-duplicate passages collapsed as memory.Search does; "+
		"each question is searched for its top %d.\n\n",
		len(results), len(filter(results, split(tune))), len(filter(results, split(heldout))),
		len(c.docs), len(c.passages), searchTop)

	b.WriteString("| split | questions | recall@5 | MRR@10 | answer in top 5, cited | target |\n|---|---:|---:|---:|---:|---|\n")
	for _, s := range []string{tune, heldout} {
		sc := scoreOf(filter(results, split(s)))
		target := "tune on it"
		if s == heldout {
			target = "recall@5 ≥ 0.92, MRR ≥ 0.80, cited ≥ 0.90"
		}
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %d, %.3f | %s |\n", s, sc.n, sc.recall, sc.mrr, sc.shown, sc.cite, target)
	}
	fmt.Fprintf(&b, "\n**Cited** is the share of the questions whose answering passage is among the first %d "+
		"for which the offline model (no provider configured), given those %d passages as a chat turn "+
		"gives them (chats.Prompt, chats.Citations), cites an answering passage.\n", citeTop, citeTop)

	b.WriteString("\n### Per document\n\n| document | kind | passages | tune: n, recall@5, MRR | held-out: n, recall@5, MRR |\n|---|---|---:|---|---|\n")
	for _, d := range c.docs {
		of := func(s string) score {
			return scoreOf(filter(results, func(r result) bool { return r.q.Doc == d.File && r.q.Split == s }))
		}
		t, h := of(tune), of(heldout)
		fmt.Fprintf(&b, "| %s | %s | %d | %d, %.3f, %.3f | %d, %.3f, %.3f |\n",
			d.File, d.Kind, c.perDoc[d.File], t.n, t.recall, t.mrr, h.n, h.recall, h.mrr)
	}

	fmt.Fprintf(&b, "\n### Latency\n\nIndex only (memory.Distinct: index.Search over the %d segments, near-duplicates collapsed, top %d), every question %d times: "+
		"p50 %s, p99 %s (%s/%s, GOMAXPROCS %d; machine-dependent, not asserted).\n",
		len(c.segs), searchTop, latencyRounds, micros(p50), micros(p99), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))

	for _, s := range []string{heldout, tune} {
		misses := filter(results, func(r result) bool { return r.q.Split == s && (r.rank == 0 || r.rank > recallAt) })
		fmt.Fprintf(&b, "\n### Misses, %s (answer not in the top %d): %d\n\n", s, recallAt, len(misses))
		if len(misses) == 0 {
			continue
		}
		b.WriteString("| id | question | rank | answer | answering passage starts | ranked first |\n|---|---|---:|---|---|---|\n")
		for _, r := range misses {
			rank := "> 10"
			if r.rank > 0 {
				rank = fmt.Sprint(r.rank)
			}
			want := c.answering(r.q.Doc, r.q.Answers)[0]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.q.ID, cell(r.q.Question), rank, cell(r.q.Answers[0]), c.opening(want), c.opening(r.first))
		}
	}
	return b.String()
}

// opening names a passage by its id and first words.
func (c corpus) opening(id string) string {
	if id == "" {
		return "(nothing)"
	}
	words := strings.Fields(c.passages[id].text)
	if len(words) > 10 {
		words = append(words[:10], "…")
	}
	return cell(id + ": " + strings.Join(words, " "))
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "`", "'", "<", "&lt;", ">", "&gt;").Replace(s)
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// qualityParts splits docs/QUALITY.md around its report section, between reportBegin and
// reportEnd.
func qualityParts(t *testing.T) (head, report, tail string) {
	t.Helper()
	raw, err := os.ReadFile(qualityPath)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok1 := strings.Cut(string(raw), reportBegin+"\n\n")
	report, tail, ok2 := strings.Cut(rest, "\n"+reportEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the report markers %q and %q", qualityPath, reportBegin, reportEnd)
	}
	return head, report, tail
}

// committedReport returns the report section of docs/QUALITY.md.
func committedReport(t *testing.T) string {
	t.Helper()
	_, report, _ := qualityParts(t)
	return report
}

// writeReport replaces the report section of docs/QUALITY.md, leaving the rest of the file as
// written by hand.
func writeReport(t *testing.T, report string) {
	t.Helper()
	head, _, tail := qualityParts(t)
	out := head + reportBegin + "\n\n" + report + "\n" + reportEnd + tail
	if err := os.WriteFile(qualityPath, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", qualityPath)
}

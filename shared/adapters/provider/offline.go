package provider

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory/index"
)

// Behaviour of the offline model.
const (
	defaultNoAnswer = "I don't know the answer to that yet."
	maxSentences    = 3 // sentences in an answer
	minWords        = 3 // shorter fragments (headings, labels) are not answers
	wordsPerDelta   = 4 // words in each streamed piece
)

// offline is the built-in extractive [llm.Model].
type offline struct{}

// NewOffline returns the built-in extractive model, which needs no key and no network. It
// answers the last user message with sentences of [llm.Request.Passages]: the one holding the most
// weight of the question's terms, then up to two more that cover terms of the question the
// first ones do not. It matches the question as memory searches it (index.QueryTerms: the
// analyzer's terms, stemmed, stopwords dropped, and their related terms at their lower
// weight); a term weighs more the fewer of the passages hold it (its idf over them), and a
// sentence's weight is multiplied by 1 plus its passage's retrieval score over the best one's
// ([memory.Passage.Score]), so that of two sentences matching alike the one in the passage
// retrieval found better answers. They are given in passage order, each followed by the
// citation of its passage ("[2]" for the second). When no sentence holds a term of the
// question, it answers [llm.Request.NoAnswer]. Usage is always counted.
//
// Offered tools, it first calls search_memory with the question (when offered and no tool has
// answered yet), then answers from the passages the caller gathered.
func NewOffline() llm.Model { return offline{} }

// offlineSearch is the one tool the offline model calls.
const offlineSearch = "search_memory"

// toolCall is the offline model's tool call for r, if it makes one.
func toolCall(r llm.Request) (llm.Reply, bool) {
	if r.NoTools || !slices.ContainsFunc(r.Tools, func(t llm.Tool) bool { return t.Name == offlineSearch }) ||
		slices.ContainsFunc(r.Messages, func(m llm.Message) bool { return m.Role == llm.RoleTool }) {
		return llm.Reply{}, false
	}
	args, _ := json.Marshal(map[string]string{"query": lastUser(r.Messages)})
	rep := offlineReply(r, "")
	rep.FinishReason = "tool_calls"
	rep.ToolCalls = []llm.ToolCall{{ID: "call_offline_1", Name: offlineSearch, Arguments: string(args)}}
	return rep, true
}

// Name implements [llm.Model].
func (offline) Name() string { return llm.Offline }

// Complete implements [llm.Model].
func (offline) Complete(ctx context.Context, r llm.Request) (llm.Reply, error) {
	if err := ctx.Err(); err != nil {
		return llm.Reply{}, err
	}
	if rep, ok := toolCall(r); ok {
		return rep, nil
	}
	return offlineReply(r, answer(r)), nil
}

// Stream implements [llm.Model]: the answer goes out a few words at a time.
func (offline) Stream(ctx context.Context, r llm.Request, onDelta func(string) error) (llm.Reply, error) {
	if onDelta == nil {
		onDelta = func(string) error { return nil }
	}
	if rep, ok := toolCall(r); ok {
		return rep, ctx.Err()
	}
	words := strings.SplitAfter(answer(r), " ")
	var sent strings.Builder
	for i := 0; i < len(words); i += wordsPerDelta {
		if err := ctx.Err(); err != nil {
			return offlineReply(r, sent.String()), err
		}
		delta := strings.Join(words[i:min(i+wordsPerDelta, len(words))], "")
		sent.WriteString(delta)
		if err := onDelta(delta); err != nil {
			return offlineReply(r, sent.String()), err
		}
	}
	return offlineReply(r, sent.String()), nil
}

func offlineReply(r llm.Request, content string) llm.Reply {
	return llm.Reply{Content: content, Model: llm.Offline, Usage: countUsage(r.Messages, content), FinishReason: "stop"}
}

// lastUser is the content of the last user message.
func lastUser(msgs []llm.Message) string {
	for _, m := range slices.Backward(msgs) {
		if m.Role == llm.RoleUser {
			return m.Content
		}
	}
	return ""
}

// sentence is a candidate sentence of a passage.
type sentence struct {
	text    string
	passage int                 // index in Request.Passages
	terms   map[string]struct{} // the asked terms it contains
	prior   float64             // how much its passage's retrieval score multiplies its weight
}

// answer is the offline model's reply to r.
func answer(r llm.Request) string {
	noAnswer := r.NoAnswer
	if noAnswer == "" {
		noAnswer = defaultNoAnswer
	}
	asked := make(map[string]float64) // term → its weight in the query, as memory searches it
	for _, w := range index.QueryTerms(lastUser(r.Messages)) {
		asked[w.Term] = w.Weight
	}
	if len(asked) == 0 {
		return noAnswer
	}
	best := 0.0
	for _, p := range r.Passages {
		best = max(best, p.Score)
	}
	var cands []*sentence
	df := make(map[string]int, len(asked)) // passages containing each asked term
	for i, p := range r.Passages {
		for t := range index.Terms(p.Text) {
			if _, ok := asked[t]; ok {
				df[t]++
			}
		}
		prior := 1.0
		if best > 0 {
			prior += p.Score / best
		}
		for _, s := range sentences(p.Text) {
			c := &sentence{text: s, passage: i, terms: make(map[string]struct{}), prior: prior}
			for t := range index.Terms(s) {
				if _, ok := asked[t]; ok {
					c.terms[t] = struct{}{}
				}
			}
			if len(c.terms) > 0 {
				cands = append(cands, c)
			}
		}
	}
	if len(cands) == 0 {
		return noAnswer
	}
	weight := make(map[string]float64, len(df)) // rarer terms weigh more
	for t, n := range df {
		weight[t] = asked[t] * math.Log(1+float64(len(r.Passages))/float64(n))
	}
	chosen := choose(cands, weight)
	parts := make([]string, 0, len(chosen))
	for _, c := range cands { // passage order
		if slices.Contains(chosen, c) {
			parts = append(parts, c.text+" ["+strconv.Itoa(c.passage+1)+"]")
		}
	}
	return strings.Join(parts, " ")
}

// choose picks the answer among the candidates (in passage order): the sentence with the most
// weight of asked terms (times its prior), then, up to maxSentences, the sentences adding the
// most weight of asked terms not yet covered, as long as they add at least half the first
// one's weight.
// Ties go to the earlier sentence.
func choose(cands []*sentence, weight map[string]float64) []*sentence {
	covered := make(map[string]struct{})
	var chosen []*sentence
	first := 0.0
	for len(chosen) < maxSentences {
		var (
			pick *sentence
			gain float64
		)
		for _, c := range cands {
			g := 0.0
			for _, t := range slices.Sorted(maps.Keys(c.terms)) { // one order, so equal sums tie alike
				if _, ok := covered[t]; !ok {
					g += weight[t]
				}
			}
			g *= c.prior
			if g > gain {
				pick, gain = c, g
			}
		}
		if pick == nil || gain*2 < first {
			break
		}
		first = max(first, gain)
		chosen = append(chosen, pick)
		for t := range pick.terms {
			covered[t] = struct{}{}
		}
	}
	return chosen
}

// sentences splits a passage into sentences: a line break ends a sentence when the next line
// is blank, a heading, a list item or a table row; within a block, a sentence ends at . ! or ?
// followed by a space. Headings and fragments of fewer than minWords words are dropped.
func sentences(text string) []string {
	var (
		out   []string
		block []string
	)
	flush := func() {
		out = append(out, splitSentences(strings.Join(block, " "))...)
		block = block[:0]
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || startsBlock(line) {
			flush()
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		if line = strings.TrimSpace(strings.TrimLeft(line, "-*+•|>")); line != "" {
			block = append(block, line)
		}
	}
	flush()
	return out
}

// startsBlock reports whether a line begins a block of its own: a heading, a list item, a table
// row or a quote.
func startsBlock(line string) bool {
	for _, marker := range []string{"#", "-", "*", "+", "•", "|", ">"} {
		if strings.HasPrefix(line, marker) {
			return true
		}
	}
	i := strings.IndexFunc(line, func(r rune) bool { return !unicode.IsDigit(r) })
	return i > 0 && (line[i] == '.' || line[i] == ')') && i+1 < len(line) && line[i+1] == ' '
}

// splitSentences splits a block of text at sentence ends: . ! or ?, with any closing quotes
// or brackets, followed by a space.
func splitSentences(block string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(strings.Fields(s)) >= minWords {
			out = append(out, s)
		}
	}
	start, ended := 0, false // ended: after a sentence end and its closing marks
	for i, r := range block {
		switch {
		case strings.ContainsRune(".!?", r), ended && strings.ContainsRune(`"')]”’»`, r):
			ended = true
		case ended && unicode.IsSpace(r):
			add(block[start:i])
			start, ended = i, false
		default:
			ended = false
		}
	}
	add(block[start:])
	return out
}

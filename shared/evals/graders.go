package evals

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// The graders' names, as cases list them.
const (
	GraderExact    = "exact"
	GraderContains = "contains"
	GraderRegex    = "regex"
	GraderSchema   = "json_schema"
	GraderSource   = "cites_source"
	GraderTool     = "tool_call"
	GraderLatency  = "latency"
	GraderCost     = "cost"
	GraderJudge    = "judge"
)

// Answer is what an agent answered a case: its text, the sources it cited, the tools it called,
// how long it took and what it cost.
type Answer struct {
	Text      string
	Sources   []Source
	ToolCalls []ToolCall
	Latency   time.Duration
	Tokens    int
	Cost      float64
}

// Source is a memory source an answer cites.
type Source struct {
	ID    string `json:"id" bson:"id"`
	Title string `json:"title" bson:"title"`
}

// ToolCall is a call of a tool with its JSON arguments. Executed says an answer's call was
// carried out: an eval answers with the tools that read the agent's own data only, and records
// the others' calls without carrying them out.
type ToolCall struct {
	Name      string          `json:"name" bson:"name"`
	Arguments freeform.Object `json:"arguments,omitempty" bson:"arguments,omitempty"`
	Executed  bool            `json:"executed,omitempty" bson:"executed,omitempty"`
}

// Grade is one grader's verdict on an answer. Error says the grader could not judge (the agent
// gave no answer, the judge's verdict could not be read): the grade does not pass. Prompt and
// Verdict are the judge's, what it was asked and what it answered.
type Grade struct {
	Grader  string `json:"grader" bson:"grader"`
	Pass    bool   `json:"pass" bson:"pass"`
	Reason  string `json:"reason" bson:"reason"`
	Error   bool   `json:"error,omitempty" bson:"error,omitempty"`
	Prompt  string `json:"prompt,omitempty" bson:"prompt,omitempty"`
	Verdict string `json:"verdict,omitempty" bson:"verdict,omitempty"`
}

// grader is a small pure function over a case and an answer, and what it needs of the case.
type grader struct {
	grade func(c *Case, a Answer) (bool, string)
	// expects says the case has what the grader compares with; field names it.
	expects func(c *Case) bool
	field   string
}

var graders = map[string]grader{
	GraderExact:    {grade: exact, expects: func(c *Case) bool { return strings.TrimSpace(c.ExpectedAnswer) != "" }, field: "expected_answer"},
	GraderContains: {grade: contains, expects: func(c *Case) bool { return len(c.ExpectedFacts) > 0 }, field: "expected_facts"},
	GraderRegex:    {grade: matches, expects: func(c *Case) bool { return c.Pattern != "" }, field: "pattern"},
	GraderSchema:   {grade: conforms, expects: func(c *Case) bool { return c.Schema != nil }, field: "schema"},
	GraderSource:   {grade: cites, expects: func(c *Case) bool { return strings.TrimSpace(c.ExpectedSource) != "" }, field: "expected_source"},
	GraderTool:     {grade: calls, expects: func(c *Case) bool { return c.ExpectedTool != nil }, field: "expected_tool"},
	GraderLatency:  {grade: inTime, expects: func(c *Case) bool { return c.MaxLatencyMS > 0 }, field: "max_latency_ms"},
	GraderCost:     {grade: inBudget, expects: func(c *Case) bool { return c.MaxTokens > 0 || c.MaxCost > 0 }, field: "max_tokens"},
	GraderJudge:    {grade: unjudged, expects: func(c *Case) bool { return c.Rubric != "" }, field: "rubric"},
}

// unjudged stands in for the judge, which asks a model (Judge) that Grade does not have: its
// grade is an error.
func unjudged(*Case, Answer) (bool, string) {
	return false, "the judge grades in eval runs, through the agent's provider"
}

// GraderNames are the graders' names, in the order a case's grades are given.
var GraderNames = []string{GraderExact, GraderContains, GraderRegex, GraderSchema, GraderSource, GraderTool, GraderLatency, GraderCost, GraderJudge}

// Grade grades a by each of c's graders, in c's order. A case that is not valid fails them all.
func (c *Case) Grade(a Answer) []Grade {
	out := make([]Grade, 0, len(c.Graders))
	if !c.prepared() {
		if err := c.Validate("case"); err != nil {
			for _, name := range c.Graders {
				out = append(out, Grade{Grader: name, Reason: "the case is not valid: " + err.Error()})
			}
			return out
		}
	}
	for _, name := range c.Graders {
		pass, reason := graders[name].grade(c, a)
		out = append(out, Grade{Grader: name, Pass: pass, Reason: reason, Error: name == GraderJudge})
	}
	return out
}

// exact: the answer is the expected one, both trimmed.
func exact(c *Case, a Answer) (bool, string) {
	if strings.TrimSpace(a.Text) == strings.TrimSpace(c.ExpectedAnswer) {
		return true, "the answer is the expected one"
	}
	return false, fmt.Sprintf("the answer is not %q", clip(strings.TrimSpace(c.ExpectedAnswer)))
}

// contains: the answer states every expected fact, in any case.
func contains(c *Case, a Answer) (bool, string) {
	text := strings.ToLower(a.Text)
	var missing []string
	for _, f := range c.ExpectedFacts {
		if !strings.Contains(text, strings.ToLower(strings.TrimSpace(f))) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("the answer lacks %d of %d facts: %q", len(missing), len(c.ExpectedFacts), missing)
	}
	return true, fmt.Sprintf("the answer states all %d facts", len(c.ExpectedFacts))
}

// matches: the answer matches the case's pattern (Go RE2 syntax).
func matches(c *Case, a Answer) (bool, string) {
	if c.re.MatchString(a.Text) {
		return true, fmt.Sprintf("the answer matches %s", c.Pattern)
	}
	return false, fmt.Sprintf("the answer does not match %s", c.Pattern)
}

// conforms: the answer is JSON valid against the case's schema.
func conforms(c *Case, a Answer) (bool, string) {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(a.Text))
	if err != nil {
		return false, "the answer is not JSON: " + err.Error()
	}
	if err := c.schema.Validate(v); err != nil {
		return false, "the answer does not conform to the schema: " + clip(err.Error())
	}
	return true, "the answer conforms to the schema"
}

// cites: one of the answer's sources has the expected id or title.
func cites(c *Case, a Answer) (bool, string) {
	want := strings.TrimSpace(c.ExpectedSource)
	for _, s := range a.Sources {
		if s.ID == want || strings.EqualFold(strings.TrimSpace(s.Title), want) {
			return true, fmt.Sprintf("the answer cites %q", want)
		}
	}
	return false, fmt.Sprintf("the answer does not cite %q (it cites %d sources)", want, len(a.Sources))
}

// calls: the agent called the expected tool with arguments that include the expected ones.
func calls(c *Case, a Answer) (bool, string) {
	want := c.ExpectedTool
	called := false
	for _, call := range a.ToolCalls {
		if call.Name != want.Name {
			continue
		}
		called = true
		if subset(map[string]any(want.Arguments), map[string]any(call.Arguments)) {
			return true, fmt.Sprintf("the agent called %s with the expected arguments", want.Name)
		}
	}
	if called {
		return false, fmt.Sprintf("the agent called %s, but not with the expected arguments", want.Name)
	}
	return false, fmt.Sprintf("the agent did not call %s", want.Name)
}

// subset says want is part of got: an object's keys each with a value part of got's, arrays of
// one length element by element, other values equal (numbers as JSON numbers).
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok || !subset(v, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(jsonValue(want), jsonValue(got))
	}
}

// jsonValue is v as encoding/json decodes it (numbers float64), so that 3 and 3.0 are equal.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// inTime: the answer came within the case's latency bound.
func inTime(c *Case, a Answer) (bool, string) {
	limit := time.Duration(c.MaxLatencyMS) * time.Millisecond
	if a.Latency <= limit {
		return true, fmt.Sprintf("answered in %d ms, within %d ms", a.Latency.Milliseconds(), c.MaxLatencyMS)
	}
	return false, fmt.Sprintf("answered in %d ms, over %d ms", a.Latency.Milliseconds(), c.MaxLatencyMS)
}

// inBudget: the answer's tokens and cost are within the case's bounds (a zero bound is none).
func inBudget(c *Case, a Answer) (bool, string) {
	if c.MaxTokens > 0 && a.Tokens > c.MaxTokens {
		return false, fmt.Sprintf("used %d tokens, over %d", a.Tokens, c.MaxTokens)
	}
	if c.MaxCost > 0 && a.Cost > c.MaxCost {
		return false, fmt.Sprintf("cost %g, over %g", a.Cost, c.MaxCost)
	}
	return true, fmt.Sprintf("used %d tokens at a cost of %g, within the bounds", a.Tokens, a.Cost)
}

// clip shortens s for a reason.
func clip(s string) string {
	const most = 200
	if len(s) <= most {
		return s
	}
	return strings.ToValidUTF8(s[:most], "") + "…"
}

// compileSchema compiles a case's schema, refusing to load any other document ($ref stays inside it).
func compileSchema(doc freeform.Object) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource("case.json", jsonValue(map[string]any(doc))); err != nil {
		return nil, err
	}
	return c.Compile("case.json")
}

// noLoader loads no document: a case's schema names none outside itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("a schema may not load %s", url)
}

package evals_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
)

func TestGraders(t *testing.T) {
	orderSchema := freeform.Object{"type": "object", "required": []any{"order_id"},
		"properties": map[string]any{"order_id": map[string]any{"type": "string", "pattern": "^A[0-9]+$"}}}
	refund := &evals.ToolCall{Name: "refund", Arguments: freeform.Object{"order": map[string]any{"id": "A17"}, "amount": 3}}
	tests := []struct {
		name   string
		c      evals.Case
		a      evals.Answer
		pass   bool
		reason string
	}{
		{"exact after trimming", evals.Case{ExpectedAnswer: " Paris\n", Graders: []string{"exact"}}, evals.Answer{Text: "Paris  "}, true, "expected"},
		{"exact other text", evals.Case{ExpectedAnswer: "Paris", Graders: []string{"exact"}}, evals.Answer{Text: "paris"}, false, `not "Paris"`},
		{"contains every fact in any case", evals.Case{ExpectedFacts: []string{"30 days", "Receipt"}, Graders: []string{"contains"}},
			evals.Answer{Text: "Returns within 30 DAYS with a receipt."}, true, "all 2 facts"},
		{"contains a fact missing", evals.Case{ExpectedFacts: []string{"30 days", "receipt"}, Graders: []string{"contains"}},
			evals.Answer{Text: "Returns within 30 days."}, false, `1 of 2 facts: ["receipt"]`},
		{"regex matches", evals.Case{Pattern: `(?i)order #\d{4}\b`, Graders: []string{"regex"}}, evals.Answer{Text: "Your Order #1234 ships today"}, true, "matches"},
		{"regex does not match", evals.Case{Pattern: `order #\d{4}\b`, Graders: []string{"regex"}}, evals.Answer{Text: "order #12"}, false, "does not match"},
		{"schema conforms", evals.Case{Schema: orderSchema, Graders: []string{"json_schema"}}, evals.Answer{Text: `{"order_id":"A17"}`}, true, "conforms"},
		{"schema violated", evals.Case{Schema: orderSchema, Graders: []string{"json_schema"}}, evals.Answer{Text: `{"order_id":"B17"}`}, false, "does not conform"},
		{"schema of no JSON", evals.Case{Schema: orderSchema, Graders: []string{"json_schema"}}, evals.Answer{Text: "A17"}, false, "not JSON"},
		{"cites by id", evals.Case{ExpectedSource: "src-1", Graders: []string{"cites_source"}},
			evals.Answer{Sources: []evals.Source{{ID: "src-0"}, {ID: "src-1", Title: "Returns"}}}, true, `cites "src-1"`},
		{"cites by title", evals.Case{ExpectedSource: "returns policy", Graders: []string{"cites_source"}},
			evals.Answer{Sources: []evals.Source{{ID: "src-1", Title: "Returns Policy"}}}, true, "cites"},
		{"cites another source", evals.Case{ExpectedSource: "src-1", Graders: []string{"cites_source"}},
			evals.Answer{Sources: []evals.Source{{ID: "src-2", Title: "Shipping"}}}, false, "does not cite"},
		{"tool with more arguments", evals.Case{ExpectedTool: refund, Graders: []string{"tool_call"}},
			evals.Answer{ToolCalls: []evals.ToolCall{{Name: "lookup"}, {Name: "refund", Arguments: freeform.Object{
				"order": map[string]any{"id": "A17", "note": "late"}, "amount": 3.0, "currency": "EUR"}}}}, true, "expected arguments"},
		{"tool with another argument", evals.Case{ExpectedTool: refund, Graders: []string{"tool_call"}},
			evals.Answer{ToolCalls: []evals.ToolCall{{Name: "refund", Arguments: freeform.Object{"order": map[string]any{"id": "A18"}, "amount": 3}}}},
			false, "not with the expected arguments"},
		{"tool with an argument missing", evals.Case{ExpectedTool: refund, Graders: []string{"tool_call"}},
			evals.Answer{ToolCalls: []evals.ToolCall{{Name: "refund", Arguments: freeform.Object{"amount": 3}}}}, false, "not with the expected arguments"},
		{"tool not called", evals.Case{ExpectedTool: refund, Graders: []string{"tool_call"}},
			evals.Answer{ToolCalls: []evals.ToolCall{{Name: "lookup"}}}, false, "did not call refund"},
		{"latency within", evals.Case{MaxLatencyMS: 2000, Graders: []string{"latency"}}, evals.Answer{Latency: 2 * time.Second}, true, "within 2000 ms"},
		{"latency over", evals.Case{MaxLatencyMS: 2000, Graders: []string{"latency"}}, evals.Answer{Latency: 2001 * time.Millisecond}, false, "over 2000 ms"},
		{"tokens and cost within", evals.Case{MaxTokens: 500, MaxCost: 0.5, Graders: []string{"cost"}}, evals.Answer{Tokens: 500, Cost: 0.5}, true, "within"},
		{"tokens over", evals.Case{MaxTokens: 500, Graders: []string{"cost"}}, evals.Answer{Tokens: 501}, false, "501 tokens, over 500"},
		{"cost over", evals.Case{MaxTokens: 500, MaxCost: 0.5, Graders: []string{"cost"}}, evals.Answer{Tokens: 10, Cost: 0.6}, false, "cost 0.6, over 0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Input = "Question?"
			if err := tt.c.Validate("case"); err != nil {
				t.Fatalf("case refused: %v", err)
			}
			grades := tt.c.Grade(tt.a)
			if len(grades) != 1 {
				t.Fatalf("grades = %+v, want one", grades)
			}
			g := grades[0]
			if g.Grader != tt.c.Graders[0] || g.Pass != tt.pass || !strings.Contains(g.Reason, tt.reason) {
				t.Fatalf("grade = %+v, want %s pass=%v with a reason containing %q", g, tt.c.Graders[0], tt.pass, tt.reason)
			}
		})
	}
}

func TestGradeEveryGraderOfACase(t *testing.T) {
	c := evals.Case{Input: "Where is my order?", ExpectedFacts: []string{"tomorrow"}, Pattern: "A[0-9]+", MaxLatencyMS: 100}
	if err := c.Validate("case"); err != nil {
		t.Fatal(err)
	}
	got := c.Grade(evals.Answer{Text: "Order A17 arrives tomorrow.", Latency: time.Second})
	want := []struct {
		grader string
		pass   bool
	}{{"contains", true}, {"regex", true}, {"latency", false}}
	if len(got) != len(want) {
		t.Fatalf("grades = %+v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Grader != w.grader || got[i].Pass != w.pass {
			t.Fatalf("grade %d = %+v, want %s pass=%v", i, got[i], w.grader, w.pass)
		}
	}
}

func TestCaseRefused(t *testing.T) {
	tests := []struct {
		name         string
		c            evals.Case
		field, words string
	}{
		{"no input", evals.Case{ExpectedAnswer: "x"}, "cases[2].input", "is required"},
		{"conversation ending with the agent", evals.Case{ExpectedAnswer: "x",
			Conversation: []evals.Turn{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}}}, "cases[2].conversation", "end with"},
		{"bad role", evals.Case{ExpectedAnswer: "x", Conversation: []evals.Turn{{Role: "system", Content: "Hi"}}}, "cases[2].conversation[0].role", "user or assistant"},
		{"invalid regex", evals.Case{Input: "q", Pattern: "a(b"}, "cases[2].pattern", "not a valid regular expression"},
		{"invalid schema", evals.Case{Input: "q", Schema: freeform.Object{"type": 12}}, "cases[2].schema", "not a valid JSON schema"},
		{"unknown grader", evals.Case{Input: "q", ExpectedAnswer: "x", Graders: []string{"vibes"}}, "cases[2].graders[0]", "must be one of"},
		{"grader without its expectation", evals.Case{Input: "q", ExpectedAnswer: "x", Graders: []string{"exact", "tool_call"}}, "cases[2].expected_tool", "required by the tool_call grader"},
		{"no grader applies", evals.Case{Input: "q"}, "cases[2].graders", "none applies"},
		{"too large", evals.Case{Input: strings.Repeat("x", evals.MaxCaseBytes), ExpectedAnswer: "x"}, "cases[2]", "a case is at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate("cases[2]")
			e := apperr.As(err)
			if err == nil || e.Kind != apperr.Invalid {
				t.Fatalf("Validate = %v, want an invalid error", err)
			}
			for _, d := range e.Details {
				if d.Field == tt.field && strings.Contains(d.Problem, tt.words) {
					return
				}
			}
			t.Fatalf("problems = %+v, want %s: ...%s...", e.Details, tt.field, tt.words)
		})
	}
}

// TestCaseSchemaLoadsNoFile: a schema's $ref to a file of the server's, valid schema though it
// is, is refused.
func TestCaseSchemaLoadsNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := evals.Case{Input: "q", Schema: freeform.Object{"$ref": "file://" + path}}
	err := c.Validate("case")
	if e := apperr.As(err); err == nil || e.Kind != apperr.Invalid || !strings.Contains(err.Error(), "may not load") {
		t.Fatalf("Validate = %v, want the schema refused for loading %s", err, path)
	}
}

func TestCaseGradersByDefault(t *testing.T) {
	c := evals.Case{Input: "q", ExpectedAnswer: "a", ExpectedSource: "s", MaxCost: 1}
	if err := c.Validate("case"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Graders, ","); got != "exact,cites_source,cost" {
		t.Fatalf("graders = %s, want exact,cites_source,cost", got)
	}
}

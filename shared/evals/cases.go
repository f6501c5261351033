// Package evals is how a team knows whether an agent got better or worse: datasets of cases
// (what to ask, and what a good answer is) and graders, small pure functions that judge an
// answer against a case; eval runs of a dataset against a version, the LLM judge, the publish
// gate and the online grading of live answers (docs/evals.md).
package evals

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// Bounds of datasets and their cases.
const (
	MaxCases        = 1000
	MaxCaseBytes    = 16 << 10
	MaxDatasets     = 100
	MaxNameLength   = 200
	MaxTurns        = 50
	MaxFacts        = 50
	maxPatternBytes = 1000
	MaxRubricLength = 4000
)

// Roles of a conversation's turns.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Turn is one message of a case's conversation.
type Turn struct {
	Role    string `json:"role" bson:"role"`
	Content string `json:"content" bson:"content"`
}

// Case is one thing to ask an agent, and what a good answer is: the graders it applies and what
// each compares with.
type Case struct {
	// Input is the end user's message; Conversation, when given instead, ends with it.
	Input          string          `json:"input,omitempty" bson:"input,omitempty"`
	Conversation   []Turn          `json:"conversation,omitempty" bson:"conversation,omitempty"`
	ExpectedAnswer string          `json:"expected_answer,omitempty" bson:"expected_answer,omitempty"`
	ExpectedFacts  []string        `json:"expected_facts,omitempty" bson:"expected_facts,omitempty"`
	Pattern        string          `json:"pattern,omitempty" bson:"pattern,omitempty"`
	Schema         freeform.Object `json:"schema,omitempty" bson:"schema,omitempty"`
	// ExpectedSource is the id or the title of a source the answer cites.
	ExpectedSource string    `json:"expected_source,omitempty" bson:"expected_source,omitempty"`
	ExpectedTool   *ToolCall `json:"expected_tool,omitempty" bson:"expected_tool,omitempty"`
	MaxLatencyMS   int       `json:"max_latency_ms,omitempty" bson:"max_latency_ms,omitempty"`
	MaxTokens      int       `json:"max_tokens,omitempty" bson:"max_tokens,omitempty"`
	MaxCost        float64   `json:"max_cost,omitempty" bson:"max_cost,omitempty"`
	// Rubric is what a good answer is, in words, for the LLM judge.
	Rubric string `json:"rubric,omitempty" bson:"rubric,omitempty"`
	// Graders are the graders that apply; left out, every grader the case has expectations for.
	Graders []string `json:"graders" bson:"graders"`

	re     *regexp.Regexp
	schema *jsonschema.Schema
	// origin names where a case came from (a JSONL line, a chat's message) in errors.
	origin string
}

// Validate checks c (field names its place in a request, as "cases[3]") and prepares its
// graders: a pattern and a schema are compiled here, once.
func (c *Case) Validate(field string) error {
	var p apperr.Problems
	c.Input = strings.TrimSpace(c.Input)
	switch {
	case c.Input == "" && len(c.Conversation) == 0:
		p.Add(field+".input", "is required (or a conversation)")
	case c.Input != "" && len(c.Conversation) > 0:
		p.Add(field+".input", "and a conversation exclude each other")
	case len(c.Conversation) > MaxTurns:
		p.Add(field+".conversation", "has at most %d messages", MaxTurns)
	case len(c.Conversation) > 0:
		for i, t := range c.Conversation {
			if t.Role != RoleUser && t.Role != RoleAssistant {
				p.Add(fmt.Sprintf("%s.conversation[%d].role", field, i), "must be user or assistant")
			}
			if strings.TrimSpace(t.Content) == "" {
				p.Add(fmt.Sprintf("%s.conversation[%d].content", field, i), "is required")
			}
		}
		if c.Conversation[len(c.Conversation)-1].Role != RoleUser {
			p.Add(field+".conversation", "must end with the end user's message")
		}
	}
	if len(c.ExpectedFacts) > MaxFacts {
		p.Add(field+".expected_facts", "has at most %d facts", MaxFacts)
	}
	for i, f := range c.ExpectedFacts {
		if strings.TrimSpace(f) == "" {
			p.Add(fmt.Sprintf("%s.expected_facts[%d]", field, i), "is empty")
		}
	}
	if c.ExpectedTool != nil && strings.TrimSpace(c.ExpectedTool.Name) == "" {
		p.Add(field+".expected_tool.name", "is required")
	}
	if c.ExpectedTool != nil {
		c.ExpectedTool.Executed = false
	}
	if c.MaxLatencyMS < 0 || c.MaxTokens < 0 || c.MaxCost < 0 {
		p.Add(field, "max_latency_ms, max_tokens and max_cost may not be negative")
	}
	c.Rubric = strings.TrimSpace(c.Rubric)
	if utf8.RuneCountInString(c.Rubric) > MaxRubricLength {
		p.Add(field+".rubric", "is at most %d characters", MaxRubricLength)
	}
	if len(c.Pattern) > maxPatternBytes {
		p.Add(field+".pattern", "is at most %d bytes", maxPatternBytes)
	} else if c.Pattern != "" {
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			p.Add(field+".pattern", "is not a valid regular expression: %s", err.Error())
		}
		c.re = re
	}
	if c.Schema != nil {
		s, err := compileSchema(c.Schema)
		if err != nil {
			p.Add(field+".schema", "is not a valid JSON schema: %s", clip(err.Error()))
		}
		c.schema = s
	}
	c.checkGraders(field, &p)
	if size := c.size(); size > MaxCaseBytes {
		p.Add(field, "is %d bytes; a case is at most %d bytes", size, MaxCaseBytes)
	}
	return p.Err()
}

// checkGraders takes every grader c has expectations for when c lists none, and checks that
// each one listed is known and has them.
func (c *Case) checkGraders(field string, p *apperr.Problems) {
	if len(c.Graders) == 0 {
		for _, name := range GraderNames {
			if graders[name].expects(c) {
				c.Graders = append(c.Graders, name)
			}
		}
		if len(c.Graders) == 0 {
			p.Add(field+".graders", "none applies: give an expected answer, facts, a pattern, a schema, a source, a tool call or a bound")
		}
		return
	}
	seen := map[string]bool{}
	for i, name := range c.Graders {
		g, ok := graders[name]
		switch {
		case !ok:
			p.Add(fmt.Sprintf("%s.graders[%d]", field, i), "must be one of %s", strings.Join(GraderNames, ", "))
		case seen[name]:
			p.Add(fmt.Sprintf("%s.graders[%d]", field, i), "names %s twice", name)
		case !g.expects(c):
			p.Add(fmt.Sprintf("%s.%s", field, g.field), "is required by the %s grader", name)
		}
		seen[name] = true
	}
	c.Graders = slices.Clip(c.Graders)
}

// size is the length of c's JSON text.
func (c *Case) size() int {
	b, err := json.Marshal(c)
	if err != nil {
		return 0
	}
	return len(b)
}

// prepared says c's graders are ready (Validate ran).
func (c *Case) prepared() bool {
	return (c.Pattern == "" || c.re != nil) && (c.Schema == nil || c.schema != nil)
}

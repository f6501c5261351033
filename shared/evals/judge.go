package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentplane/agentplane/shared/llm"
)

// maxVerdict bounds the judge's answer kept with a grade.
const maxVerdict = 2000

// judgeSchema is the verdict the judge answers with.
var judgeSchema = llm.Schema{Name: "eval_verdict", Schema: map[string]any{
	"type": "object", "additionalProperties": false, "required": []string{"pass", "reason"},
	"properties": map[string]any{"pass": map[string]any{"type": "boolean"}, "reason": map[string]any{"type": "string"}},
}}

// judgeInstruction is the judge's system prompt.
const judgeInstruction = "You grade one answer of an AI assistant against a rubric. Judge only by the rubric: does the answer " +
	"meet it? Answer only with a JSON object: {\"pass\": true or false, \"reason\": \"one sentence saying why\"}."

// JudgePrompt is what the judge is asked about answer to c: the system prompt, then the rubric,
// the conversation and the answer.
func JudgePrompt(c Case, answer string) []llm.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Rubric:\n%s\n\n", c.Rubric)
	if len(c.Conversation) > 0 {
		b.WriteString("Conversation:\n")
		for _, t := range c.Conversation {
			fmt.Fprintf(&b, "%s: %s\n", t.Role, t.Content)
		}
	} else {
		fmt.Fprintf(&b, "The user asked:\n%s\n", c.Input)
	}
	fmt.Fprintf(&b, "\nThe assistant answered:\n%s", answer)
	return []llm.Message{{Role: llm.RoleSystem, Content: judgeInstruction}, {Role: llm.RoleUser, Content: b.String()}}
}

// Judge grades answer to c by the case's rubric through complete (the agent's provider): the
// grade keeps the prompt and the verdict as the model gave it. A call that fails, or a verdict
// that is not {"pass": boolean, "reason": string}, is an error grade, never a pass; the call's
// failure is returned besides, for the caller to ask again later when it may pass.
func Judge(ctx context.Context, complete func(context.Context, llm.Request) (llm.Reply, error), c Case, answer string) (Grade, error) {
	msgs := JudgePrompt(c, answer)
	g := Grade{Grader: GraderJudge, Prompt: msgs[0].Content + "\n\n" + msgs[1].Content}
	res, err := complete(ctx, llm.Request{Messages: msgs, MaxTokens: 300, Schema: &judgeSchema})
	if err != nil {
		g.Error, g.Reason = true, "the judge could not be asked: "+clip(err.Error())
		return g, err
	}
	g.Verdict = strings.ToValidUTF8(res.Content[:min(len(res.Content), maxVerdict)], "")
	var v struct {
		Pass   *bool  `json:"pass"`
		Reason string `json:"reason"`
	}
	text := strings.TrimSpace(res.Content)
	text = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(text, "```json"), "```"), "```")
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &v); err != nil || v.Pass == nil {
		g.Error, g.Reason = true, "the judge's verdict could not be read: it is not {\"pass\": true|false, \"reason\": ...}"
		return g, nil
	}
	g.Pass, g.Reason = *v.Pass, clip(strings.TrimSpace(v.Reason))
	if g.Reason == "" {
		g.Reason = "the judge gave no reason"
	}
	return g, nil
}

package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/ids"
)

// OpenAI's Responses API, answered by an agent: a response is a turn of one of the agent's
// chats, and its id names the chat, so previous_response_id goes on with it.

// responsePrefix starts a response's id: the chat's id and a random part follow.
const responsePrefix = "resp_"

// responseID is the id of a response of the chat.
func responseID(chatID string) string {
	random := strings.ReplaceAll(ids.New(), "-", "")
	return responsePrefix + chatID + "_" + random[len(random)-12:]
}

// chatOfResponse is the chat a response id names; "" when it names none.
func chatOfResponse(id string) string {
	rest, ok := strings.CutPrefix(strings.TrimSpace(id), responsePrefix)
	if !ok {
		return ""
	}
	chat, _, ok := strings.Cut(rest, "_")
	if !ok {
		return ""
	}
	return chat
}

// responseRequest is a Responses request; what the door does not use (tools, temperature,
// store...) is ignored.
type responseRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       string            `json:"instructions"`
	PreviousResponseID string            `json:"previous_response_id"`
	Stream             bool              `json:"stream"`
	Metadata           map[string]string `json:"metadata"`
	Reasoning          struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	MaxOutputTokens flex.OptInt `json:"max_output_tokens"`
	// User (else SafetyIdentifier) names the end user the client asks for (doorAsker).
	User             string `json:"user"`
	SafetyIdentifier string `json:"safety_identifier"`
}

// responseInput is an item of a request's input: a message (role and content) or the output
// of a function call (call_id and output); other items are left out.
type responseInput struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

// turnOf reads a Responses request's turn: input is the user's text or a list of items, and
// previous_response_id (else metadata.chat_id) names the chat to go on with.
func (req responseRequest) turnOf() (httpx.Turn, error) {
	var list []said
	var text string
	if raw := strings.TrimSpace(string(req.Input)); raw == "" || raw == "null" {
		return httpx.Turn{}, apperr.Invalidf("input", "is required: the user's message, as text or as a list of items")
	} else if json.Unmarshal(req.Input, &text) == nil {
		list = []said{{role: "user", text: text, at: "input"}}
	} else {
		var items []responseInput
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return httpx.Turn{}, apperr.Invalidf("input", "must be text or a list of items")
		}
		for i, it := range items {
			at := fmt.Sprintf("input[%d]", i)
			switch it.Type {
			case "", "message":
				text, err := contentText(it.Content, at+".content", "input_text", "output_text", "text")
				if err != nil {
					return httpx.Turn{}, err
				}
				list = append(list, said{role: it.Role, text: text, at: at})
			case "function_call_output":
				output, err := contentText(it.Output, at+".output", "input_text", "output_text", "text")
				if err != nil {
					return httpx.Turn{}, err
				}
				list = append(list, said{role: "tool", text: output, callID: it.CallID, at: at})
			}
		}
	}
	chatID := req.Metadata["chat_id"]
	if req.PreviousResponseID != "" {
		if chatID = chatOfResponse(req.PreviousResponseID); chatID == "" {
			return httpx.Turn{}, apperr.Invalidf("previous_response_id", "must be the id of a response of this API")
		}
	}
	return turnFrom(list, asked{chatID: chatID, chatMode: req.Metadata["chat_mode"], reasoningMode: req.Metadata["reasoning_mode"],
		effort: req.Reasoning.Effort, instructions: req.Instructions, stream: req.Stream, maxTokens: req.MaxOutputTokens, field: "input"})
}

// Response answers a Responses request with a turn of the agent its model names: as a response
// object, or as its typed event stream.
func (d *Door) Response(c *gin.Context) {
	var req responseRequest
	if err := d.Decoder.Decode(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	bot, t, ok := d.doorTurn(c, req.Model, req.turnOf)
	if !ok {
		return
	}
	w := &responseWriter{c: c, req: req, created: time.Now().Unix(), itemID: "msg_" + strings.ReplaceAll(ids.New(), "-", "")}
	var sink httpx.Sink
	if req.Stream {
		w.st = httpx.NewSSE(c, d.Heartbeat)
		defer w.st.Close()
		sink = w
	}
	reply, err := d.Turns.Converse(c.Request.Context(), bot, doorAsker(c, req.User, req.SafetyIdentifier), t, sink)
	if err != nil {
		if chats.IsDisconnect(err) && c.Request.Context().Err() != nil {
			return
		}
		if w.st == nil || !w.st.Began() {
			if apperr.As(err).Code == "chat_not_found" && req.PreviousResponseID != "" {
				err = &apperr.Error{Kind: apperr.NotFound, Code: "previous_response_not_found", Message: "The previous response does not exist or you do not have access to it.",
					Details: []apperr.Detail{{Field: "previous_response_id", Problem: "not found"}}}
			}
			httpx.Fail(c, err)
			return
		}
		status, _, e := httpx.ErrorOf(c, err)
		o := openAIErrorOf(status, e).Error
		_ = w.event("error", gin.H{"code": o.Code, "message": o.Message, "param": o.Param})
		return
	}
	w.finish(reply)
}

// responseWriter answers a response: the response object at its end, or its events as the
// reply is made.
type responseWriter struct {
	c       *gin.Context
	st      *httpx.SSE
	req     responseRequest
	created int64
	id      string
	itemID  string
	seq     int
	// opened says the message item was added to the stream; sent is its text so far.
	opened bool
	sent   strings.Builder
}

type responseOut struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Model              string             `json:"model"`
	Output             []responseItem     `json:"output"`
	Usage              *responseUsage     `json:"usage"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Instructions       *string            `json:"instructions"`
	Metadata           map[string]string  `json:"metadata"`
	Error              *openAIErrorObject `json:"error"`
	IncompleteDetails  *struct{}          `json:"incomplete_details"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	ToolChoice         string             `json:"tool_choice"`
	Tools              []any              `json:"tools"`
	Text               gin.H              `json:"text"`
	Agentplane         *extension         `json:"agentplane,omitempty"`
}

type responseItem struct {
	Type      string         `json:"type"`
	ID        string         `json:"id"`
	Status    string         `json:"status"`
	Role      string         `json:"role,omitempty"`
	Content   []responsePart `json:"content,omitempty"`
	CallID    string         `json:"call_id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Arguments string         `json:"arguments,omitempty"`
}

type responsePart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// object is the response as it stands: in progress with output so far, or done with reply.
func (w *responseWriter) object(status string, output []responseItem, r *chats.Reply) responseOut {
	out := responseOut{ID: w.id, Object: "response", CreatedAt: w.created, Status: status, Model: w.req.Model, Output: output,
		Metadata: w.req.Metadata, ToolChoice: "auto", Tools: []any{}, Text: gin.H{"format": gin.H{"type": "text"}}}
	if out.Output == nil {
		out.Output = []responseItem{}
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	if w.req.PreviousResponseID != "" {
		out.PreviousResponseID = &w.req.PreviousResponseID
	}
	if w.req.Instructions != "" {
		out.Instructions = &w.req.Instructions
	}
	if r != nil {
		u := r.Usage
		out.Usage = &responseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
			InputTokensDetails:  map[string]int{"cached_tokens": u.PromptTokensDetails["cached_tokens"]},
			OutputTokensDetails: map[string]int{"reasoning_tokens": u.CompletionTokensDetails["reasoning_tokens"]}}
		out.Agentplane = extensionOf(*r)
	}
	return out
}

// outputOf is a reply's output: its message, or the function call its run waits for.
func (w *responseWriter) outputOf(r chats.Reply) []responseItem {
	if calls := pausedCall(r); calls != nil {
		return []responseItem{{Type: "function_call", ID: "fc_" + r.ExecutionID, Status: "completed", CallID: calls[0].ID,
			Name: calls[0].Function.Name, Arguments: calls[0].Function.Arguments}}
	}
	return []responseItem{w.message(r.Reply, "completed")}
}

func (w *responseWriter) message(text, status string) responseItem {
	return responseItem{Type: "message", ID: w.itemID, Status: status, Role: "assistant",
		Content: []responsePart{{Type: "output_text", Text: text, Annotations: []any{}}}}
}

// event writes one of the stream's typed events, numbered.
func (w *responseWriter) event(typ string, fields gin.H) error {
	fields["type"], fields["sequence_number"] = typ, w.seq
	w.seq++
	return w.st.Typed(typ, fields)
}

// InChat begins the stream once the chat is known: the response's id names it.
func (w *responseWriter) InChat(chatID string) error {
	if w.id != "" {
		return nil
	}
	w.id = responseID(chatID)
	if err := w.event("response.created", gin.H{"response": w.object("in_progress", nil, nil)}); err != nil {
		return err
	}
	return w.event("response.in_progress", gin.H{"response": w.object("in_progress", nil, nil)})
}

// Stored begins the stream: the user's message is in its chat.
func (w *responseWriter) Stored(m chats.Message) error { return w.InChat(m.ChatID) }

// Delta streams a piece of the reply's text, opening the message item first.
func (w *responseWriter) Delta(text string) error {
	if !w.opened {
		w.opened = true
		if err := w.event("response.output_item.added", gin.H{"output_index": 0, "item": responseItem{Type: "message", ID: w.itemID,
			Status: "in_progress", Role: "assistant", Content: []responsePart{}}}); err != nil {
			return err
		}
		if err := w.event("response.content_part.added", gin.H{"item_id": w.itemID, "output_index": 0, "content_index": 0,
			"part": responsePart{Type: "output_text", Text: "", Annotations: []any{}}}); err != nil {
			return err
		}
	}
	w.sent.WriteString(text)
	return w.event("response.output_text.delta", gin.H{"item_id": w.itemID, "output_index": 0, "content_index": 0, "delta": text, "logprobs": []any{}})
}

// finish answers the reply: the response object, or the stream's last events.
func (w *responseWriter) finish(r chats.Reply) {
	if w.st == nil {
		w.id = responseID(r.ChatID)
		w.c.JSON(200, w.object("completed", w.outputOf(r), &r))
		return
	}
	if err := w.InChat(r.ChatID); err != nil {
		return
	}
	output := w.outputOf(r)
	if calls := pausedCall(r); calls == nil || w.opened {
		if rest, ok := strings.CutPrefix(r.Reply, w.sent.String()); calls == nil && ok && (rest != "" || !w.opened) {
			if err := w.Delta(rest); err != nil {
				return
			}
		}
		text := w.sent.String()
		part := responsePart{Type: "output_text", Text: text, Annotations: []any{}}
		for _, ev := range []struct {
			typ    string
			fields gin.H
		}{
			{"response.output_text.done", gin.H{"item_id": w.itemID, "output_index": 0, "content_index": 0, "text": text, "logprobs": []any{}}},
			{"response.content_part.done", gin.H{"item_id": w.itemID, "output_index": 0, "content_index": 0, "part": part}},
			{"response.output_item.done", gin.H{"output_index": 0, "item": w.message(text, "completed")}},
		} {
			if err := w.event(ev.typ, ev.fields); err != nil {
				return
			}
		}
		if calls != nil {
			output = append([]responseItem{w.message(text, "completed")}, output...)
		}
	}
	if calls := pausedCall(r); calls != nil {
		item, index := output[len(output)-1], len(output)-1
		added := item
		added.Status, added.Arguments = "in_progress", ""
		for _, ev := range []struct {
			typ    string
			fields gin.H
		}{
			{"response.output_item.added", gin.H{"output_index": index, "item": added}},
			{"response.function_call_arguments.delta", gin.H{"item_id": item.ID, "output_index": index, "delta": item.Arguments}},
			{"response.function_call_arguments.done", gin.H{"item_id": item.ID, "output_index": index, "arguments": item.Arguments}},
			{"response.output_item.done", gin.H{"output_index": index, "item": item}},
		} {
			if err := w.event(ev.typ, ev.fields); err != nil {
				return
			}
		}
	}
	_ = w.event("response.completed", gin.H{"response": w.object("completed", output, &r)})
}

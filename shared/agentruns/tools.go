package agentruns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/tools"
	"github.com/agentplane/agentplane/shared/workflows"
	"github.com/agentplane/agentplane/shared/workspaces"
)

// Scope is whom a tool acts for: the project and agent of the execution, set by the API from
// the caller's key and request. Tools never take a project or agent from the model.
type Scope struct {
	ProjectID string
	BotID     string
	// ChatID is the chat the run answers in.
	ChatID string
	// ExecutionID is the run's.
	ExecutionID string
	// Workspace is the uuid of the workspace the file tools act on: the chat's, authorised when
	// the turn began ("" for none). The model names paths only.
	Workspace string
	Request   Request
	// Numbered is how many memory passages earlier cycles found: new ones are numbered after.
	Numbered int
	// Sources is the set of memory sources of the version the run answers as (nil: all the
	// agent's sources).
	Sources *memory.SetRef
	// Workflows are the workflows of the version the run serves, which run_workflow runs as
	// their revisions have them (nil: the agent's workflows as they are).
	Workflows []agents.WorkflowState
}

// Result is what a tool observed.
type Result struct {
	// Observation is shown to the model and in the cycle.
	Observation string
	Passages    []memory.Passage
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments.
	Parameters map[string]any
	// Changes marks tools that change data: approval-gated unless the agent auto-approves, and
	// run under an idempotency key.
	Changes bool
	// ServerLabel names whose tool it is: the agent tool's name, or agentplane for the built-in
	// ones; Operation is the tool's own name on its server (Name for the built-in ones).
	ServerLabel string
	Operation   string
	// Approval is the policy of an agent tool's operation (tools.ApprovalAlways, Never or
	// Auto); the built-in ones have none: Changes decides.
	Approval string
	// Reads marks the built-in tools that only read the agent's own data (its memory, CRM and
	// calendar): the only ones a trial (Try) carries out.
	Reads  bool
	run    func(ctx context.Context, sc Scope, args json.RawMessage, key string) (Result, error)
	schema *openapi3.Schema
}

// builtin labels the platform's own tools.
const builtin = "agentplane"

// asks reports whether calling t waits for the user's approval on an agent of autoApprove.
func (t *Tool) asks(autoApprove int) bool {
	switch t.Approval {
	case tools.ApprovalAlways:
		return true
	case tools.ApprovalNever:
		return false
	}
	return t.Changes && autoApprove != 1
}

// Toolbox holds the tools of agent runs and the services they act through: the built-in ones,
// and, for one run (For), the operations of its agent's own tools.
type Toolbox struct {
	tools    []Tool
	byName   map[string]*Tool
	external *tools.Service
	// handoff is the handoff tool, offered to the runs of agents that hand chats to people.
	handoff Tool
	// files are the file tools, offered to the runs that edit a workspace.
	files []Tool
}

// Services are what the tools act through.
type Services struct {
	Memory   *memory.Memory
	CRM      *crm.Service
	Calendar *calendar.Service
	// Workflows starts workflow runs (run_workflow).
	Workflows *workflows.Runs
	// Tools are the agents' own tools (MCP servers); nil offers the built-in ones only.
	Tools *tools.Service
	// Handoff flags the run's chat for a person of the team (the handoff tool).
	Handoff func(ctx context.Context, projectID, botID, chatID, reason, urgency string) error
	// Workspaces are the agents' workspaces the file tools edit.
	Workspaces *workspaces.Service
	Now        func() time.Time
}

// maxSlots bounds the slots an availability check lists.
const maxSlots = 20

// NewToolbox returns the tools of agent runs.
func NewToolbox(s Services) *Toolbox {
	if s.Now == nil {
		s.Now = time.Now
	}
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	dealFields := map[string]any{
		"title":    str("The deal's title."),
		"value":    map[string]any{"type": "integer", "minimum": 0, "description": "The deal's value in the currency's minor units or whole units, as the business counts."},
		"currency": str("ISO 4217 code, such as USD."),
		"status":   map[string]any{"type": "string", "enum": []any{"open", "won", "lost"}},
		"stage":    str("Name or uuid of a pipeline stage."),
		"contact": map[string]any{"type": "object", "properties": map[string]any{
			"name": str("Contact name."), "email": str("Contact email."), "phone": str("Contact phone."), "company": str("Contact company."),
		}},
	}
	withID := map[string]any{"deal_id": str("The deal's uuid.")}
	for k, v := range dealFields {
		withID[k] = v
	}
	builtins := []Tool{
		{Name: "search_memory", Description: "Searches the agent's memory (its documents, pages and notes) and returns numbered passages to cite like [1].",
			Parameters: object(map[string]any{"query": str("What to look for."),
				"top": map[string]any{"type": "integer", "minimum": 1, "maximum": memory.MaxTop}}, "query"),
			run: s.searchMemory},
		{Name: "get_deal", Description: "Reads one deal of the agent's CRM by its uuid.",
			Parameters: object(map[string]any{"deal_id": str("The deal's uuid.")}, "deal_id"), run: s.getDeal},
		{Name: "list_deals", Description: "Lists the agent's CRM deals, optionally by status or stage.",
			Parameters: object(map[string]any{"status": dealFields["status"], "stage": str("Name or uuid of a stage."),
				"page": map[string]any{"type": "integer", "minimum": 1}}), run: s.listDeals},
		{Name: "create_deal", Description: "Creates a deal in the agent's CRM.", Changes: true,
			Parameters: object(dealFields, "title"), run: s.createDeal},
		{Name: "update_deal", Description: "Changes a deal of the agent's CRM: title, value, currency, status, stage or contact.", Changes: true,
			Parameters: object(withID, "deal_id"), run: s.updateDeal},
		{Name: "create_task", Description: "Adds a task (a thing to do: a call, a proposal to send) to the agent's CRM, optionally due at a time and linked to a contact or a deal of the CRM.", Changes: true,
			Parameters: object(map[string]any{"title": str("What is to be done."), "description": str("Details."),
				"due_at":     str("When it is due: an RFC 3339 time such as 2026-12-01T09:00:00Z, or a date such as 2026-12-01."),
				"priority":   map[string]any{"type": "string", "enum": []any{"low", "normal", "high"}},
				"contact_id": str("The uuid of a contact of the CRM the task is about."), "deal_id": str("The uuid of a deal the task is about.")}, "title"),
			run: s.createTask},
		{Name: "complete_task", Description: "Marks a task of the agent's CRM done.", Changes: true,
			Parameters: object(map[string]any{"task_id": str("The task's uuid.")}, "task_id"), run: s.completeTask},
		{Name: "list_tasks", Description: "Lists the agent's CRM tasks: open ones due today, upcoming or overdue, snoozed ones, or by status.",
			Parameters: object(map[string]any{"view": map[string]any{"type": "string", "enum": []any{"today", "upcoming", "overdue", "snoozed"}},
				"status": map[string]any{"type": "string", "enum": []any{"open", "done"}}, "page": map[string]any{"type": "integer", "minimum": 1}}),
			run: s.listTasks},
		{Name: "calendar_check_availability", Description: "Lists the free meeting slots of the agent's calendar between two times (RFC 3339; the next 7 days by default).",
			Parameters: object(map[string]any{"from": str("RFC 3339 start, e.g. 2026-12-01T00:00:00Z."), "to": str("RFC 3339 end.")}),
			run:        s.availability},
		{Name: "calendar_book", Description: "Books a free slot of the agent's calendar for someone.", Changes: true,
			Parameters: object(map[string]any{"start": str("RFC 3339 start of a free slot."), "name": str("Who is meeting."),
				"email": str("Their email."), "notes": str("Anything to prepare.")}, "start", "name", "email"),
			run: s.book},
		{Name: "run_workflow", Description: "Starts a run of one of the agent's active workflows, with an optional input object its actions can use as {{input.name}}.", Changes: true,
			Parameters: object(map[string]any{"workflow_id": str("The workflow's uuid."),
				"input": map[string]any{"type": "object", "description": "Values for the workflow."}}, "workflow_id"),
			run: s.runWorkflow},
	}
	handoff := []Tool{{Name: "handoff", Description: "Hands this conversation to a person of the team, when the user asks for one or you cannot help them: a person is asked to take over and answers here. Tell the user so.",
		Parameters: object(map[string]any{"reason": str("Why a person should take over, for the team."),
			"urgency": map[string]any{"type": "string", "enum": []any{"low", "normal", "high"}}}, "reason"),
		run: s.handoff}}
	files := s.fileTools()
	for _, list := range [][]Tool{builtins, handoff, files} {
		for i := range list {
			t := &list[i]
			t.ServerLabel, t.Operation = builtin, t.Name
			if t.schema = tools.ParseSchema(t.Parameters); t.schema == nil {
				panic(fmt.Sprintf("runs: the schema of %s does not parse", t.Name))
			}
		}
	}
	for i := range builtins {
		builtins[i].Reads = !builtins[i].Changes
	}
	tb := newToolbox(builtins, s.Tools)
	tb.handoff, tb.files = handoff[0], files
	return tb
}

// withHandoff is tb with the handoff tool besides, for an agent that hands chats to people.
func (tb *Toolbox) withHandoff() *Toolbox {
	if tb.handoff.run == nil || tb.byName[tb.handoff.Name] != nil {
		return tb
	}
	return tb.derive(append(slices.Clone(tb.tools), tb.handoff))
}

// withFiles is tb with the file tools besides, for a run that edits the workspace workspace
// ("" for none: tb).
func (tb *Toolbox) withFiles(workspace string) *Toolbox {
	if workspace == "" || len(tb.files) == 0 || tb.byName[tb.files[0].Name] != nil {
		return tb
	}
	return tb.derive(append(slices.Clone(tb.tools), tb.files...))
}

// derive is a toolbox of list, offering what tb offers besides.
func (tb *Toolbox) derive(list []Tool) *Toolbox {
	out := newToolbox(list, tb.external)
	out.handoff, out.files = tb.handoff, tb.files
	return out
}

func newToolbox(list []Tool, external *tools.Service) *Toolbox {
	tb := &Toolbox{tools: list, byName: map[string]*Tool{}, external: external}
	for i := range tb.tools {
		tb.byName[tb.tools[i].Name] = &tb.tools[i]
	}
	return tb
}

// maxOffered bounds the tools a model is offered (OpenAI takes at most 128).
const maxOffered = 128

// For is the toolbox of a run of the agent: the built-in tools and the active operations of
// the agent's own tools as set (those of the version the run serves) has them, or as they are
// for a nil set, which call the agent's servers (and are checked against their schemas where
// the validator reads them; the server checks them anyway).
func (tb *Toolbox) For(ctx context.Context, projectID, botID string, set []tools.State) (*Toolbox, error) {
	if tb.external == nil {
		return tb, nil
	}
	offers, err := tb.external.Offers(ctx, projectID, botID, set)
	if err != nil || len(offers) == 0 {
		return tb, err
	}
	list := slices.Clone(tb.tools)
	for _, o := range offers {
		if len(list) == maxOffered {
			break
		}
		if _, taken := tb.byName[o.Name]; taken {
			continue
		}
		list = append(list, Tool{Name: o.Name, Description: o.Description, Parameters: o.Schema, Changes: !o.ReadOnly,
			ServerLabel: o.Label, Operation: o.Operation, Approval: o.Approval, schema: tools.ParseSchema(o.Schema), run: tb.invoke(o)})
	}
	return tb.derive(list), nil
}

// invoke is the function of an agent tool's operation o: a call of its server, whose own
// failures and the server's silence are what the model observes.
func (tb *Toolbox) invoke(o tools.Offer) func(context.Context, Scope, json.RawMessage, string) (Result, error) {
	return func(ctx context.Context, sc Scope, args json.RawMessage, _ string) (Result, error) {
		out, err := tb.external.Invoke(tools.WithHop(ctx, sc.Request.Hop), sc.ProjectID, sc.BotID, o, sc.ExecutionID, args)
		switch {
		case errors.Is(err, tools.ErrCall):
			return Result{}, fmt.Errorf("%w: %s", errRefused, strings.TrimPrefix(err.Error(), tools.ErrCall.Error()+": "))
		case err != nil:
			return Result{}, err
		case out.IsError:
			return Result{}, fmt.Errorf("%w: %s", errRefused, out.Text)
		}
		return Result{Observation: out.Text}, nil
	}
}

func object(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		o["required"] = req
	}
	return o
}

// Tools lists the tools, in a stable order.
func (tb *Toolbox) Tools() []Tool { return tb.tools }

// Lookup returns the tool named name.
func (tb *Toolbox) Lookup(name string) (*Tool, bool) {
	t, ok := tb.byName[name]
	return t, ok
}

// Offer is the tools as the model sees them.
func (tb *Toolbox) Offer() []llm.Tool {
	out := make([]llm.Tool, len(tb.tools))
	for i, t := range tb.tools {
		out[i] = llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return out
}

// errRefused marks a tool call that failed because of what it asked (bad arguments, a deal
// not found): the model observes the failure and the run goes on.
var errRefused = errors.New("refused")

// Call runs t with the model's arguments after checking them against its schema. An error
// wrapping errRefused is the model's mistake; any other is the platform's (retry the run).
func (t *Tool) Call(ctx context.Context, sc Scope, arguments, key string) (Result, error) {
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	if err := t.Check(arguments); err != nil {
		return Result{}, err
	}
	res, err := t.run(ctx, sc, json.RawMessage(arguments), key)
	if err != nil {
		switch apperr.As(err).Kind {
		case apperr.Invalid, apperr.NotFound, apperr.Conflict, apperr.Forbidden:
			return Result{}, fmt.Errorf("%w: %s", errRefused, describe(err))
		}
		return Result{}, err
	}
	return res, nil
}

// Check checks the model's arguments against t's schema: an error wrapping errRefused says
// what is wrong with them. An agent tool whose schema the validator does not read is not checked
// here: its server checks its arguments.
func (t *Tool) Check(arguments string) error {
	if err := tools.Check(t.schema, arguments); err != nil {
		return fmt.Errorf("%w: %v", errRefused, err)
	}
	return nil
}

// describe is an error as the model reads it: the message and the problems of each field.
func describe(err error) string {
	e := apperr.As(err)
	msg := e.Message
	for _, d := range e.Details {
		msg += fmt.Sprintf("; %s %s", d.Field, d.Problem)
	}
	return msg
}

// observe writes v as the observation text.
func observe(v any) Result {
	raw, _ := json.Marshal(v)
	return Result{Observation: string(raw)}
}

func (s Services) searchMemory(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	var a struct {
		Query string `json:"query"`
		Top   int    `json:"top"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return Result{}, apperr.Invalidf("arguments", "%v", err)
	}
	if sc.Request.NoMemory {
		return Result{Observation: "Memory is turned off for this request."}, nil
	}
	top := a.Top
	if top == 0 {
		top = sc.Request.Top
	}
	passages, err := s.Memory.Search(ctx, memory.Query{ProjectID: sc.ProjectID, BotID: sc.BotID, Text: a.Query,
		Top: min(max(top, 1), memory.MaxTop), Filter: memory.Filter{SourceIDs: sc.Request.SourceIDs, Tags: sc.Request.Tags}, Sources: sc.Sources})
	if err != nil {
		return Result{}, err
	}
	if len(passages) == 0 {
		return Result{Observation: "No passage of memory matches."}, nil
	}
	var b strings.Builder
	for i, p := range passages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] %s\n%s", sc.Numbered+i+1, p.Heading(), p.Text)
	}
	return Result{Observation: b.String(), Passages: passages}, nil
}

func (s Services) getDeal(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	var a struct {
		DealID string `json:"deal_id"`
	}
	_ = json.Unmarshal(raw, &a)
	v, err := s.CRM.Deal(ctx, sc.ProjectID, sc.BotID, strings.TrimSpace(a.DealID))
	if err != nil {
		return Result{}, err
	}
	return observe(v), nil
}

func (s Services) listDeals(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	var a struct {
		Status string `json:"status"`
		Stage  string `json:"stage"`
		Page   int    `json:"page"`
	}
	_ = json.Unmarshal(raw, &a)
	page := paging.Page{Page: max(a.Page, 1), PerPage: 20}
	list, total, err := s.CRM.Deals(ctx, sc.ProjectID, sc.BotID, crm.DealQuery{Status: a.Status, Stage: a.Stage}, page)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"total": total, "page": page.Page, "deals": list}), nil
}

func (s Services) createDeal(ctx context.Context, sc Scope, raw json.RawMessage, key string) (Result, error) {
	var in crm.DealInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return Result{}, apperr.Invalidf("arguments", "%v", err)
	}
	v, err := s.CRM.CreateDealOnce(ctx, sc.ProjectID, sc.BotID, in, key)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"created": v}), nil
}

func (s Services) updateDeal(ctx context.Context, sc Scope, raw json.RawMessage, key string) (Result, error) {
	var in struct {
		crm.DealInput
		DealID string `json:"deal_id"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return Result{}, apperr.Invalidf("arguments", "%v", err)
	}
	v, err := s.CRM.UpdateDealOnce(ctx, sc.ProjectID, sc.BotID, strings.TrimSpace(in.DealID), in.DealInput, key)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"updated": v}), nil
}

func (s Services) createTask(ctx context.Context, sc Scope, raw json.RawMessage, key string) (Result, error) {
	var in crm.TaskInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return Result{}, apperr.Invalidf("arguments", "%v", err)
	}
	t, err := s.CRM.CreateTaskOnce(ctx, sc.ProjectID, sc.BotID, in, key)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"created": t}), nil
}

func (s Services) completeTask(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	var a struct {
		TaskID string `json:"task_id"`
	}
	_ = json.Unmarshal(raw, &a)
	t, err := s.CRM.CompleteTask(ctx, sc.ProjectID, sc.BotID, a.TaskID)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"completed": t}), nil
}

func (s Services) listTasks(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	var a struct {
		View   string `json:"view"`
		Status string `json:"status"`
		Page   int    `json:"page"`
	}
	_ = json.Unmarshal(raw, &a)
	page := paging.Page{Page: max(a.Page, 1), PerPage: 20}
	list, total, err := s.CRM.Tasks(ctx, sc.ProjectID, sc.BotID, crm.TaskQuery{Status: a.Status, View: a.View}, page)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"total": total, "page": page.Page, "tasks": list}), nil
}

func (s Services) availability(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	var a struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	_ = json.Unmarshal(raw, &a)
	from, to := s.Now().UTC(), time.Time{}
	var p apperr.Problems
	if a.From != "" {
		t, err := time.Parse(time.RFC3339, a.From)
		if err != nil {
			p.Add("from", "must be an RFC 3339 time")
		}
		from = t
	}
	to = from.Add(7 * 24 * time.Hour)
	if a.To != "" {
		t, err := time.Parse(time.RFC3339, a.To)
		if err != nil {
			p.Add("to", "must be an RFC 3339 time")
		}
		to = t
	}
	if err := p.Err(); err != nil {
		return Result{}, err
	}
	settings, err := s.Calendar.Settings(ctx, sc.ProjectID, sc.BotID)
	if err != nil {
		return Result{}, err
	}
	if !settings.IsEnabled {
		return Result{Observation: "The agent's calendar is not enabled for bookings."}, nil
	}
	slots, err := s.Calendar.Slots(ctx, sc.ProjectID, sc.BotID, from, to)
	if err != nil {
		return Result{}, err
	}
	more := len(slots) > maxSlots
	return observe(map[string]any{"timezone": settings.Timezone, "slots": slots[:min(len(slots), maxSlots)], "more": more}), nil
}

func (s Services) book(ctx context.Context, sc Scope, raw json.RawMessage, key string) (Result, error) {
	var in calendar.BookingInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return Result{}, apperr.Invalidf("arguments", "%v", err)
	}
	b, err := s.Calendar.Book(ctx, sc.ProjectID, sc.BotID, in, key)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"booked": b}), nil
}

func (s Services) runWorkflow(ctx context.Context, sc Scope, raw json.RawMessage, key string) (Result, error) {
	var a struct {
		WorkflowID string         `json:"workflow_id"`
		Input      map[string]any `json:"input"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return Result{}, apperr.Invalidf("arguments", "%v", err)
	}
	r, err := s.Workflows.RunAt(ctx, sc.ProjectID, sc.BotID, sc.Workflows, a.WorkflowID, a.Input, "agent", key)
	if err != nil {
		return Result{}, err
	}
	return observe(map[string]any{"started": map[string]any{"run_id": r.UUID, "workflow_id": r.WorkflowID, "status": r.Status}}), nil
}

// handoff flags the run's chat for a person of the team, with the model's reason.
func (s Services) handoff(ctx context.Context, sc Scope, raw json.RawMessage, _ string) (Result, error) {
	var a struct {
		Reason  string `json:"reason"`
		Urgency string `json:"urgency"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return Result{}, apperr.Invalidf("arguments", "%v", err)
	}
	if err := s.Handoff(ctx, sc.ProjectID, sc.BotID, sc.ChatID, a.Reason, a.Urgency); err != nil {
		return Result{}, err
	}
	return Result{Observation: "A person of the team was asked to take over this conversation; they will answer here. Tell the user so."}, nil
}

package agentruns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/lease"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/tasks"
)

// Bots reads agents.
type Bots interface {
	Get(ctx context.Context, projectID, idOrUUID string) (agents.Bot, error)
	// At is the agent with the behaviour of its version n.
	At(ctx context.Context, b agents.Bot, n int) (agents.Bot, error)
}

// Runner runs executions in workers.
type Runner struct {
	repo  Repo
	chats *chats.Service
	bots  Bots
	tools *Toolbox
	relay Relay
	log   *slog.Logger
	lease time.Duration
	now   func() time.Time
	// cycled is told of each cycle a run completes (the workers' metrics).
	cycled func()
	// stopped is told of each run with an origin that ends or waits for an approval.
	stopped func(context.Context, Execution) error
}

// releaseTimeout bounds the change that gives a run's lease up, and what follows it.
const releaseTimeout = 10 * time.Second

// OnStop has stopped told of each run with an origin (Execution.Origin) once it ends or comes to
// wait for an approval, after that is persisted. What stopped fails to do is its own
// reconciler's to finish: the run does not wait for it.
func (r *Runner) OnStop(stopped func(context.Context, Execution) error) { r.stopped = stopped }

// NewRunner returns the worker side of agent runs. lease is how long a worker holds an
// execution without renewing it (renewed every third of it while it runs); cycled is called for
// each cycle completed.
func NewRunner(repo Repo, cs *chats.Service, bots Bots, tools *Toolbox, relay Relay, log *slog.Logger, lease time.Duration, cycled func()) *Runner {
	return &Runner{repo: repo, chats: cs, bots: bots, tools: tools, relay: relay, log: log, lease: lease, cycled: cycled,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// errLost ends a run whose lease another worker took, found by one of its writes.
var errLost = errors.New("runs: the execution's lease was lost")

// Run runs the execution of t until it answers, fails or waits for an approval. final says
// this is the task's last attempt: a failure then fails the execution for good. A run that
// finds its execution finished, waiting, or held by another worker does nothing: a second task
// of one run (the reconciler's, say) is harmless, and a run whose worker died is taken over by
// the redelivery of its task once its lease expired, or else by the reconciler.
func (r *Runner) Run(parent context.Context, t tasks.AgentRunPayload, final bool) error {
	owner := ids.New()
	now := r.now()
	e, ok, err := r.repo.Claim(parent, t.ExecutionID, owner, now.Add(r.lease), now)
	if err != nil {
		return err
	}
	if !ok {
		r.log.Debug("agent run not taken", "execution_id", t.ExecutionID, "status", e.Status)
		return nil
	}
	// The run's context ends when its lease is lost; the renewal stops once the run returns,
	// before what follows it: a run that ends gives its lease up, which the renewal would take
	// for a lost one.
	h := &holder{Runner: r, e: e, owner: owner, key: t.ProviderKey}
	lost, err := lease.Hold(parent, r.lease/3, func(ctx context.Context) (bool, error) {
		return r.repo.Renew(ctx, e.ID, owner, r.now().Add(r.lease))
	}, h.run)
	switch {
	case err == nil:
		// A run that ended moved its execution out of the live ones with its last change.
		return nil
	case lost || errors.Is(err, errLost):
		// Another worker took the run, or a cancel was asked for: the run's writes and the
		// renewals of its lease are refused once it is.
		return h.canceled(parent)
	case parent.Err() != nil:
		// Shutting down: give the run back at once, so that the task, which asynq queues again,
		// is taken by the next worker without waiting for the lease to expire.
		r.release(parent, e.ID, owner)
		return err
	case final || apperr.As(err).Kind == apperr.Invalid || llm.Permanent(err):
		return h.fail(context.WithoutCancel(parent), err)
	}
	// The retry asynq makes must find the run free: held by this attempt's lease it would take
	// the run for another worker's, do nothing and end the task, leaving the run to the
	// reconciler.
	r.log.Warn("agent run step failed; retrying", "execution_id", e.ID, "error", err)
	r.release(parent, e.ID, owner)
	return err
}

// release gives up owner's lease of the execution id, queueing it again.
func (r *Runner) release(ctx context.Context, id, owner string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.repo.Release(ctx, id, owner, r.now()); err != nil {
		r.log.Warn("agent run not released", "execution_id", id, "error", err)
	}
}

// holder is a run in progress, holding the execution's lease.
type holder struct {
	*Runner
	e     Execution
	owner string
	key   string
	bot   agents.Bot
	chat  chats.Chat
	turn  chats.Turn
	model llm.Model
	in    chats.Input
	// known is what is known of the run's user, for its prompts.
	known string
	// set is the run's toolbox: the built-in tools and the agent's own.
	set *Toolbox
}

func (h *holder) run(ctx context.Context) error {
	if h.e.CancelRequested {
		// A worker that held the run stopped before it could end it canceled.
		return h.cancel(ctx)
	}
	var err error
	if h.bot, err = h.bots.Get(ctx, h.e.ProjectID, h.e.BotID); err != nil {
		return err
	}
	if v := h.e.Request.Version; v > 0 {
		if h.bot, err = h.bots.At(ctx, h.bot, v); err != nil {
			return err
		}
	}
	if h.set, err = h.tools.For(ctx, h.e.ProjectID, h.e.BotID, h.bot.ToolSet()); err != nil {
		return err
	}
	if h.bot.HumanHandoff {
		h.set = h.set.withHandoff()
	}
	h.set = h.set.withFiles(h.e.Request.Workspace)
	if h.chat, err = h.chats.Get(ctx, h.e.ProjectID, h.e.BotID, h.e.ChatID); err != nil {
		return err
	}
	earlier, err := h.chats.Messages(ctx, h.chat, h.e.User.Seq-chats.HistoryTurns, h.e.User.Seq-1)
	if err != nil {
		return err
	}
	h.in = h.e.Request.input(h.key)
	h.model = h.chats.Model(h.in, h.bot)
	h.turn = chats.Turn{ProjectID: h.e.ProjectID, Bot: h.bot, Chat: h.chat, User: h.e.User, Earlier: earlier, Input: h.in, Started: h.e.Started,
		EndUser: h.e.EndUser}
	answered, err := h.answered(ctx)
	if err != nil {
		return err
	}
	if answered != nil {
		return h.end(ctx, *answered)
	}
	h.known = h.chats.Recall(ctx, h.turn)
	if p := h.e.Pending; p != nil && p.Decided {
		if err := h.resolve(ctx, *p); err != nil {
			return err
		}
	}
	for {
		if h.e.Calls >= MaxCalls {
			h.e.Capped = true
			return h.answer(ctx, capAnswer(h.e), "")
		}
		req := h.request(h.e.Calls == MaxCalls-1)
		rep, err := h.model.Stream(ctx, req, func(d string) error {
			if !h.e.TextProtocol {
				h.relay.Notify(ctx, h.e.ID, Progress{Delta: d})
			}
			return nil
		})
		if err != nil {
			if llm.ToolsRefused(err) && !h.e.TextProtocol {
				if err := h.advance(ctx, Change{Set: map[string]any{"text_protocol": true}}); err != nil {
					return err
				}
				h.e.TextProtocol = true
				continue
			}
			return err
		}
		h.e.Calls++
		h.e.Usage.add(rep.Usage)
		step := h.parse(rep)
		if step.call == nil && h.e.Step < len(h.e.Plan)-1 {
			if err := h.nextStep(ctx, step.answer); err != nil {
				return err
			}
			continue
		}
		if step.call == nil {
			return h.answer(ctx, step.answer, rep.Model)
		}
		if err := h.act(ctx, step.thought, *step.call); err != nil {
			return err
		}
		if h.e.Status == StatusApproval {
			return nil
		}
	}
}

// step is what the model chose: a tool call (with the thought before it) or an answer.
type step struct {
	thought string
	call    *llm.ToolCall
	answer  string
}

// parse reads a reply: native tool calls (the first one: one action per cycle), or the text
// protocol's "Action:" lines, else an answer.
func (h *holder) parse(rep llm.Reply) step {
	if !h.e.TextProtocol {
		if len(rep.ToolCalls) > 0 {
			c := rep.ToolCalls[0]
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d", len(h.e.Cycles)+1)
			}
			return step{thought: strings.TrimSpace(rep.Content), call: &c}
		}
		return step{answer: strings.TrimSpace(rep.Content)}
	}
	return parseText(rep.Content, len(h.e.Cycles)+1)
}

var (
	actionLine = regexp.MustCompile(`(?m)^\s*Action:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	inputLine  = regexp.MustCompile(`(?s)Action Input:\s*(\{.*\})`)
	finalLine  = regexp.MustCompile(`(?s)Final Answer:\s*(.*)$`)
	thoughtPre = regexp.MustCompile(`(?s)^\s*(?:Thought:\s*)?(.*?)\s*(?:Action:|Final Answer:|$)`)
)

// parseText reads the text protocol: "Thought: ...", then "Action: <tool>" and "Action Input:
// {json}", or "Final Answer: ...". A reply in neither form is the answer.
func parseText(content string, cycle int) step {
	thought := ""
	if m := thoughtPre.FindStringSubmatch(content); m != nil {
		thought = strings.TrimSpace(m[1])
	}
	if m := actionLine.FindStringSubmatch(content); m != nil {
		args := "{}"
		if in := inputLine.FindStringSubmatch(content); in != nil {
			args = strings.TrimSpace(in[1])
		}
		return step{thought: thought, call: &llm.ToolCall{ID: fmt.Sprintf("text_%d", cycle), Name: m[1], Arguments: args}}
	}
	if m := finalLine.FindStringSubmatch(content); m != nil {
		return step{answer: strings.TrimSpace(m[1])}
	}
	return step{answer: strings.TrimSpace(content)}
}

// nextStep keeps the answer of the plan's current step and moves to the next one.
func (h *holder) nextStep(ctx context.Context, result string) error {
	done := h.e.stepInfo()
	results := append(slices.Clone(h.e.Results), result)
	if err := h.advance(ctx, Change{
		Set: map[string]any{"step": h.e.Step + 1, "results": results, "calls": h.e.Calls, "usage": h.e.Usage},
		Log: []Entry{h.entry(EventStep, map[string]any{"step": h.e.Step + 1, "of": len(h.e.Plan), "stepInfo": done, "result": result})},
	}); err != nil {
		return err
	}
	h.e.Step, h.e.Results = h.e.Step+1, results
	return nil
}

// act runs (or holds for approval) the tool call of the next cycle and persists the cycle. A
// call whose arguments break its tool's schema is refused at once: nobody is asked to approve
// what cannot run.
func (h *holder) act(ctx context.Context, thought string, call llm.ToolCall) error {
	n := len(h.e.Cycles) + 1
	tool, ok := h.set.Lookup(call.Name)
	if ok && tool.asks(h.bot.AutoApproveTools) && tool.Check(call.Arguments) == nil {
		p := &Pending{Cycle: n, CallID: call.ID, Tool: call.Name, Label: tool.ServerLabel, Operation: tool.Operation, Arguments: call.Arguments, Thought: thought}
		h.e.Pending, h.e.Status = p, StatusApproval
		reply := h.reply(nil)
		return h.advance(ctx, Change{
			Set: map[string]any{"pending": p, "status": StatusApproval, "calls": h.e.Calls, "usage": h.e.Usage, "owner": ""},
			Log: []Entry{h.entry(EventApproval, map[string]any{"chat": reply})},
		})
	}
	c := Cycle{Cycle: n, Thought: thought, Action: call.Name, ActionInput: call.Arguments, CallID: call.ID}
	if err := h.execute(ctx, &c); err != nil {
		return err
	}
	return h.record(ctx, c, nil)
}

// execute runs the cycle's tool and fills in what it observed. A tool the run does not have (a
// name the model made up, or an agent tool removed while its call waited for approval) is
// observed as such.
func (h *holder) execute(ctx context.Context, c *Cycle) error {
	c.Sources = []memory.Ref{}
	tool, ok := h.set.Lookup(c.Action)
	if !ok {
		names := make([]string, 0, len(h.set.Tools()))
		for _, t := range h.set.Tools() {
			names = append(names, t.Name)
		}
		c.Observation = fmt.Sprintf("There is no tool %q. The tools are: %s.", c.Action, strings.Join(names, ", "))
		return nil
	}
	c.ServerLabel, c.Operation = tool.ServerLabel, tool.Operation
	sc := Scope{ProjectID: h.e.ProjectID, BotID: h.e.BotID, ChatID: h.e.ChatID, ExecutionID: h.e.ID, Workspace: h.e.Request.Workspace,
		Request: h.e.Request, Numbered: len(passages(h.e.Cycles)), Sources: h.bot.Sources, Workflows: h.bot.WorkflowSet()}
	res, err := tool.Call(ctx, sc, c.ActionInput, h.e.ID+":"+strconv.Itoa(c.Cycle))
	switch {
	case errors.Is(err, errRefused):
		c.Observation = "Error: " + strings.TrimPrefix(err.Error(), errRefused.Error()+": ")
		return nil
	case err != nil:
		return err
	}
	c.Observation, c.ActionSuccess, c.Passages = res.Observation, true, res.Passages
	for i, p := range res.Passages {
		ref := p.Source
		ref.CitationNumber = sc.Numbered + i + 1
		c.Sources = append(c.Sources, ref)
	}
	return nil
}

// resolve carries out the user's decision on the pending tool call.
func (h *holder) resolve(ctx context.Context, p Pending) error {
	c := Cycle{Cycle: p.Cycle, Thought: p.Thought, Action: p.Tool, ActionInput: p.Arguments, CallID: p.CallID, Sources: []memory.Ref{}}
	if p.Approved {
		if err := h.execute(ctx, &c); err != nil {
			return err
		}
	} else {
		c.Observation = "The user rejected this action; it was not carried out. Do not retry it unless asked."
	}
	return h.record(ctx, c, []string{"pending"})
}

// record persists a completed cycle (with the calls made so far) and announces it.
func (h *holder) record(ctx context.Context, c Cycle, unset []string) error {
	c.Timestamp = h.now().Format(time.RFC3339Nano)
	if err := h.advance(ctx, Change{
		Set:   map[string]any{"calls": h.e.Calls, "usage": h.e.Usage},
		Unset: unset,
		Cycle: &c,
		Log:   []Entry{h.entry(EventCycle, h.cycleData(c))},
	}); err != nil {
		return err
	}
	h.e.Cycles = append(h.e.Cycles, c)
	h.e.Pending = nil
	h.cycled()
	return nil
}

// cycleData is the data of a cycle's entry: the cycle, and the step of the plan it serves.
func (h *holder) cycleData(c Cycle) map[string]any {
	data := map[string]any{"cycle": c}
	if len(h.e.Plan) > 0 {
		data["stepInfo"] = h.e.stepInfo()
	}
	return data
}

// answer adds the run's answer to the chat, then ends the run. Its time is the run's: from the
// user's message to the answer, waits for approval included. A worker that stops between the two
// writes leaves the answer in the chat, where the run's next attempt finds it (answered) and ends
// the run with it; one that stops before the first calls the model again.
func (h *holder) answer(ctx context.Context, text, model string) error {
	if text == "" {
		text, h.e.Capped = capAnswer(h.e), true
	}
	if model == "" {
		model = chats.ModelName(h.in, h.bot)
	}
	all := passages(h.e.Cycles)
	cited := chats.Citations(text, all)
	msg := h.chats.AgentMessage(h.turn, text, model, h.now().Sub(h.e.User.CreatedAt), h.e.Usage.provider(), cited)
	msg.Confidence, msg.ConfidenceScore = chats.ConfidenceOf(all, cited)
	msg.CreditUsed = strconv.Itoa(max(h.e.Calls, 1))
	msg.Reasoning = map[string]any{"executionId": h.e.ID, "cycles": len(h.e.Cycles), "calls": h.e.Calls}
	if err := h.chats.Append(ctx, h.e.ProjectID, h.bot, &h.chat, &msg); err != nil {
		return err
	}
	return h.end(ctx, msg)
}

// answered is the answer an earlier attempt of the run added to the chat, if one did: the
// chat's agent message after the user's whose reasoning names the execution.
func (h *holder) answered(ctx context.Context) (*chats.Message, error) {
	added, err := h.chats.Messages(ctx, h.chat, h.e.User.Seq+1, h.chat.Messages)
	if err != nil {
		return nil, err
	}
	for _, m := range added {
		if m.Role == chats.RoleAgent && m.Reasoning["executionId"] == h.e.ID {
			return &m, nil
		}
	}
	return nil, nil
}

// end ends the run with its answer, msg, in the chat, and queues the extraction of what the
// user's message says about them and, when the agent grades live answers, the answer's grading.
func (h *holder) end(ctx context.Context, msg chats.Message) error {
	h.e.Answer, h.e.Status = &msg, StatusDone
	if err := h.advance(ctx, Change{
		Set: map[string]any{"status": StatusDone, "answer": msg, "calls": h.e.Calls, "usage": h.e.Usage, "capped": h.e.Capped, "owner": ""},
		Log: []Entry{h.entry(EventDone, map[string]any{"chat": h.reply(&msg)})},
		End: true,
	}); err != nil {
		return err
	}
	h.chats.Heard(ctx, h.turn)
	h.chats.Sample(ctx, h.turn, msg)
	return nil
}

// canceled ends the run canceled when a cancel of it was asked for while this worker still holds
// it (read once: the refusal of a write or of a renewal does not say why); a run another worker
// took is left to it.
func (h *holder) canceled(parent context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), releaseTimeout)
	defer cancel()
	e, err := h.repo.Get(ctx, h.e.ProjectID, h.e.BotID, h.e.ID)
	if err != nil || !e.CancelRequested || e.Owner != h.owner || e.Status != StatusRunning {
		return err
	}
	h.e.Log = e.Log
	return h.cancel(ctx)
}

// cancel ends the run canceled, as it stands: what it did so far is kept, and it adds nothing
// to the chat.
func (h *holder) cancel(ctx context.Context) error {
	h.log.Info("agent run canceled", "execution_id", h.e.ID)
	h.e.Status = StatusCanceled
	return h.advance(ctx, Change{Set: map[string]any{"status": StatusCanceled, "calls": h.e.Calls, "usage": h.e.Usage, "owner": ""},
		Log: []Entry{h.entry(EventCanceled, map[string]any{})}, End: true})
}

// fail ends the run with err, as an error entry carrying its kind, code and message.
func (h *holder) fail(ctx context.Context, err error) error {
	e := apperr.As(err)
	h.log.Warn("agent run failed", "execution_id", h.e.ID, "code", e.Code, "error", err)
	h.e.Status = StatusFailed
	return h.advance(ctx, Change{Set: map[string]any{"status": StatusFailed, "owner": ""},
		Log: []Entry{h.entry(EventError, Failure{Kind: e.Kind.String(), Code: e.Code, Message: e.Message})}, End: true})
}

// reply is the chat object of the run as it stands, with answer when it has one.
func (h *holder) reply(answer *chats.Message) chats.Reply { return h.set.reply(h.e, answer) }

// entry is the next log entry of the execution.
func (h *holder) entry(event string, data any) Entry {
	raw, _ := json.Marshal(data)
	return Entry{Event: event, Data: string(raw)}
}

// advance persists c, numbering its log entries after the execution's, and announces them.
func (h *holder) advance(ctx context.Context, c Change) error {
	for i := range c.Log {
		c.Log[i].Seq = len(h.e.Log) + i + 1
	}
	if c.Set == nil {
		c.Set = map[string]any{}
	}
	c.Set["updated_at"] = h.now()
	if owner, ok := c.Set["owner"]; ok && owner == "" {
		// The change gives the lease up (the run ends or waits): once it is written, the renewal
		// finds the lease gone and cancels ctx, which must not cut short what follows the write
		// (the move to the finished runs, the notices, telling the run's origin).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
	}
	ok, err := h.repo.Advance(ctx, h.e.ID, h.owner, len(h.e.Log), c)
	if err != nil {
		return err
	}
	if !ok {
		return errLost
	}
	h.e.Log = append(h.e.Log, c.Log...)
	for _, en := range c.Log {
		h.relay.Notify(ctx, h.e.ID, noticeOf(en))
	}
	if _, stops := h.e.stop(); stops && h.e.Origin != "" && h.stopped != nil {
		if err := h.stopped(ctx, h.e); err != nil {
			h.log.Warn("the origin of a run was not told it stopped", "execution_id", h.e.ID, "origin", h.e.Origin, "error", err)
		}
	}
	return nil
}

// request is the model request of the next cycle: the instruction, what is known of the user
// and how to work, the conversation, the question and the cycles so far. last asks for the
// answer (no more tools).
func (h *holder) request(last bool) llm.Request {
	var sys strings.Builder
	sys.WriteString(chats.Preamble(h.in, h.bot, h.known))
	fmt.Fprintf(&sys, "\n\nYou can use tools to look things up and act for the user; the current time is %s. "+
		"Use a tool when it helps, one at a time, then answer. When you use memory, cite its passages by number like [1]. "+
		"Never invent ids: read them with a tool first.", h.now().Format(time.RFC3339))
	if h.e.Request.Workspace != "" {
		sys.WriteString("\n\nThe user asks you to edit the files of their workspace: list and read them with the file tools, then " +
			"change them with write_file, rename_file and delete_file as asked. Paths are relative to the workspace's root.")
	}
	if len(h.e.Plan) > 0 {
		sys.WriteString("\n\nYou are carrying out this plan, which the user accepted:")
		for i, st := range h.e.Plan {
			fmt.Fprintf(&sys, "\n%d. %s", i+1, st)
		}
		for i, r := range h.e.Results {
			fmt.Fprintf(&sys, "\n\nResult of step %d: %s", i+1, r)
		}
		if h.e.Step < len(h.e.Plan)-1 {
			fmt.Fprintf(&sys, "\n\nNow carry out step %d only, then answer with its result.", h.e.Step+1)
		} else {
			fmt.Fprintf(&sys, "\n\nNow carry out step %d, the last, then answer the user's request in full.", h.e.Step+1)
		}
	}
	if last {
		sys.WriteString(" You have no more tool calls: answer now with what you found.")
	}
	if h.e.TextProtocol {
		sys.WriteString(textProtocol(h.set))
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: sys.String()}}
	msgs = append(msgs, chats.History(h.turn.Earlier)...)
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: h.e.Request.Message})
	for _, c := range h.e.Cycles {
		if h.e.TextProtocol {
			msgs = append(msgs,
				llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("Thought: %s\nAction: %s\nAction Input: %s", c.Thought, c.Action, c.ActionInput)},
				llm.Message{Role: llm.RoleUser, Content: "Observation: " + c.Observation})
			continue
		}
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, Content: c.Thought, ToolCalls: []llm.ToolCall{{ID: c.CallID, Name: c.Action, Arguments: c.ActionInput}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: c.CallID, Content: c.Observation})
	}
	req := llm.Request{Model: chats.ModelName(h.in, h.bot), MaxTokens: chats.MaxTokens(h.in, h.bot), Messages: msgs,
		Passages: passages(h.e.Cycles), NoAnswer: h.bot.NoAnswerReply}
	if !h.e.TextProtocol {
		req.Tools, req.NoTools = h.set.Offer(), last
	}
	return req
}

// textProtocol describes the tools and the format of the text protocol.
func textProtocol(tb *Toolbox) string {
	var b strings.Builder
	b.WriteString("\n\nTools:\n")
	for _, t := range tb.Tools() {
		params, _ := json.Marshal(t.Parameters)
		fmt.Fprintf(&b, "- %s: %s Parameters (JSON schema): %s\n", t.Name, t.Description, params)
	}
	b.WriteString("\nTo use a tool, answer exactly:\nThought: <why>\nAction: <tool name>\nAction Input: <arguments as a JSON object>\n" +
		"You will get an Observation. When you are done, answer:\nFinal Answer: <your answer to the user>")
	return b.String()
}

// passages are the memory passages the cycles found, in citation order.
func passages(cycles []Cycle) []memory.Passage {
	var out []memory.Passage
	for _, c := range cycles {
		out = append(out, c.Passages...)
	}
	return out
}

// capAnswer is the answer of a run that used all its calls without answering: what it did.
func capAnswer(e Execution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "I stopped after %d steps without reaching a final answer.", e.Calls)
	if n := len(e.Cycles); n > 0 {
		last := e.Cycles[n-1]
		obs := []rune(last.Observation)
		if len(obs) > 500 {
			obs = append(obs[:500], '…')
		}
		fmt.Fprintf(&b, " The last thing I did was %s, which returned: %s", last.Action, string(obs))
	}
	return b.String()
}

func (u *Usage) add(p llm.Usage) {
	u.PromptTokens += p.PromptTokens
	u.CompletionTokens += p.CompletionTokens
	u.TotalTokens += p.TotalTokens
	u.CachedTokens += p.CachedTokens
	u.ReasoningTokens += p.ReasoningTokens
}

func (u Usage) provider() llm.Usage {
	return llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		CachedTokens: u.CachedTokens, ReasoningTokens: u.ReasoningTokens}
}

// input is the chat request the execution keeps, with the provider key of the task.
func (r Request) input(providerKey string) chats.Input {
	msg := r.Message
	in := chats.Input{Message: &msg, ProviderKey: providerKey, ProviderHost: r.ProviderHost, Model: r.Model, SourceIDs: r.SourceIDs,
		Tags: r.Tags, Instruction: r.Instruction, ReasoningMode: "agent", ChatMode: r.ChatMode}
	in.Top.Set, in.Top.Value = r.HasTop, flex.Int(r.Top)
	in.MaxReplyTokens.Set, in.MaxReplyTokens.Value = r.HasMaxTokens, flex.Int(r.MaxReplyTokens)
	if r.NoMemory {
		off := false
		in.Memory = &off
	}
	return in
}

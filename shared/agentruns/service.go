package agentruns

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/tasks"
)

// Service is the API side of agent runs: it starts them, follows them and takes approvals.
type Service struct {
	repo  Repo
	chats *chats.Service
	tools *Toolbox
	queue tasks.Queue
	relay Relay
	log   *slog.Logger
	// poll is how often a follower re-reads the execution when no notice comes.
	poll time.Duration
	now  func() time.Time
}

// NewService returns the API side of agent runs. Followers re-read the execution every poll
// even when notices come (a lost notice costs at most that).
func NewService(repo Repo, cs *chats.Service, tools *Toolbox, queue tasks.Queue, relay Relay, log *slog.Logger, poll time.Duration) *Service {
	return &Service{repo: repo, chats: cs, tools: tools, queue: queue, relay: relay, log: log, poll: poll,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

var _ chats.AgentRuns = (*Service)(nil)

// Start stores a new execution for the turn t (carrying out plan, when it has steps) and queues
// the run; it returns the execution's id. The execution's log begins with the stored message.
func (s *Service) Start(ctx context.Context, t chats.Turn, providerKey string, plan chats.Plan) (string, error) {
	now := s.now()
	id := cmp.Or(t.Input.RunID, ids.New())
	stored, _ := json.Marshal(map[string]any{"message": t.User, "executionId": id})
	req := requestOf(t.Input)
	req.Version, req.Workspace = t.Bot.Serving(), t.Workspace
	if plan.Request != "" {
		req.Message = plan.Request
	}
	e := Execution{ID: id, ProjectID: t.ProjectID, BotID: t.Bot.ID, ChatID: t.Chat.UUID, Plan: plan.Steps, Origin: t.Input.Origin,
		Request: req, User: t.User, Status: StatusQueued, Cycles: []Cycle{},
		Log: []Entry{{Seq: 1, Event: EventStored, Data: string(stored)}}, Started: t.Started, CreatedAt: now, UpdatedAt: now, EndUser: t.EndUser}
	if err := s.repo.Insert(ctx, e); err != nil {
		return "", err
	}
	return e.ID, s.queue.Enqueue(ctx, tasks.NewAgentRunTask(tasks.AgentRunPayload{ExecutionID: e.ID, ProviderKey: providerKey}))
}

// Tools are the tools runs of the agent b (at the version it serves) may use.
func (s *Service) Tools(ctx context.Context, b agents.Bot) ([]llm.Tool, error) {
	set, err := s.tools.For(ctx, b.ProjectID, b.ID, b.ToolSet())
	if err != nil {
		return nil, err
	}
	return set.Offer(), nil
}

func requestOf(in chats.Input) Request {
	r := Request{Message: strings.TrimSpace(*in.Message), Model: in.Model, Instruction: in.Instruction, SourceIDs: in.SourceIDs,
		Tags: in.Tags, ProviderHost: in.ProviderHost, ChatMode: in.ChatMode, NoMemory: in.Memory != nil && !*in.Memory, Hop: in.Hop}
	r.Top, r.HasTop = int(in.Top.Value), in.Top.Set
	r.MaxReplyTokens, r.HasMaxTokens = int(in.MaxReplyTokens.Value), in.MaxReplyTokens.Set
	return r
}

// Get returns an execution of the agent.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Execution, error) {
	if id = strings.TrimSpace(id); id == "" {
		return Execution{}, apperr.Invalidf("execution_id", "is required")
	}
	return s.repo.Get(ctx, projectID, botID, id)
}

// Following is a run being followed: its notices are watched from before it is read, so that
// no entry kept after the read is missed. Close ends the watch.
type Following struct {
	// Run is the execution as Open read it.
	Run     Execution
	s       *Service
	fresh   bool // Run was read after the watch began
	notices <-chan Progress
	stop    func()
}

// Open reads the agent's execution id to follow it: the read comes after the watch of its
// notices begins, so Follow starts from Run without reading it again.
func (s *Service) Open(ctx context.Context, projectID, botID, id string) (*Following, error) {
	f := s.watch(id)
	e, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		f.Close()
		return nil, err
	}
	f.Run, f.fresh = e, true
	return f, nil
}

// watch begins to watch the notices of the execution id; without them (NATS unreachable) a
// follower polls.
func (s *Service) watch(id string) *Following {
	notices, stop, err := s.relay.Watch(id)
	if err != nil {
		s.log.Warn("run progress notices unavailable; polling", "execution_id", id, "error", err)
		stop = func() {}
	}
	return &Following{s: s, notices: notices, stop: stop}
}

// Watching begins to follow e as its caller has it (Follow reads it first).
func (s *Service) Watching(e Execution) *Following {
	f := s.watch(e.ID)
	f.Run = e
	return f
}

// Close ends the watch of the run's notices.
func (f *Following) Close() { f.stop() }

// Follow follows the run from Run as Open read it (see Service.Follow).
func (f *Following) Follow(ctx context.Context, after int, emit func(Entry) error, delta func(string) error) (Execution, error) {
	return f.s.follow(ctx, f.Run, !f.fresh, f.notices, after, emit, delta)
}

// Follow emits the execution's log entries after the one numbered after, as they are kept, and
// passes the deltas of the answer to delta while it is made (nil ignores them). It returns when
// an entry that ends what a client follows is the last one (an approval, the answer, an error),
// or with ctx's error. The execution is read when the follow starts (unless Open just read it),
// on each poll tick, and on each notice but those that carry the next entry (a cycle or a
// step): the run is read back once per follow and once per stop, not once per entry.
func (s *Service) Follow(ctx context.Context, e Execution, after int, emit func(Entry) error, delta func(string) error) (Execution, error) {
	f := s.Watching(e)
	defer f.Close()
	return f.Follow(ctx, after, emit, delta)
}

// follow is Follow from e, read first when read says so, with the notices of the run (nil:
// none, the follower polls).
func (s *Service) follow(ctx context.Context, e Execution, read bool, notices <-chan Progress, after int, emit func(Entry) error, delta func(string) error) (Execution, error) {
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	// noticed counts the entries added to e from notices since it was read.
	noticed := 0
	for {
		if read {
			got, err := s.repo.Get(ctx, e.ProjectID, e.BotID, e.ID)
			if err != nil {
				return e, err // the execution as last read: a follower out of time answers with it
			}
			e, noticed = got, 0
		}
		for _, en := range e.Log {
			if en.Seq <= after {
				continue
			}
			if err := emit(en); err != nil {
				return s.current(ctx, e, noticed), err
			}
			after = en.Seq
		}
		if last, ok := e.stop(); ok && after >= last.Seq {
			return e, nil
		}
		p, err := await(ctx, notices, tick.C, delta)
		if err != nil {
			return s.current(ctx, e, noticed), err
		}
		switch read = false; {
		case p.Entry != nil && p.Entry.Seq == after+1:
			e.Log, noticed = append(e.Log, *p.Entry), noticed+1
		case p.Seq == 0 || p.Seq > after:
			// The tick, an entry that stops the follower, or one after an entry missed.
			read = true
		}
	}
}

// current is e, read again when entries came from notices since it was read: a follow that
// stops before the run does answers with the run's cycles as they are, which notices do not
// carry.
func (s *Service) current(ctx context.Context, e Execution, noticed int) Execution {
	if noticed == 0 {
		return e
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if got, err := s.repo.Get(ctx, e.ProjectID, e.BotID, e.ID); err == nil {
		return got
	}
	return e
}

// await waits for a notice of a kept entry or the poll tick, passing deltas on meanwhile: it
// returns the notice, or no notice at the tick.
func await(ctx context.Context, notices <-chan Progress, tick <-chan time.Time, delta func(string) error) (Progress, error) {
	for {
		select {
		case <-ctx.Done():
			return Progress{}, ctx.Err()
		case <-tick:
			return Progress{}, nil
		case p := <-notices:
			if p.Delta == "" {
				if p.Seq == 0 {
					continue // an empty delta
				}
				return p, nil
			}
			if delta != nil {
				if err := delta(p.Delta); err != nil {
					return Progress{}, err
				}
			}
		}
	}
}

// Reply is the chat object of the execution as it stands: the answer or the approval it waits
// for, else the steps so far with hasMoreSteps. A failed run is its error; a canceled one a
// Conflict, run_canceled.
func (s *Service) Reply(ctx context.Context, e Execution) (chats.Reply, error) {
	if last, ok := e.stop(); ok {
		switch last.Event {
		case EventDone, EventApproval:
			var v struct {
				Chat chats.Reply `json:"chat"`
			}
			if err := json.Unmarshal([]byte(last.Data), &v); err != nil {
				return chats.Reply{}, fmt.Errorf("runs: entry %d of %s: %w", last.Seq, e.ID, err)
			}
			return v.Chat, nil
		case EventError:
			return chats.Reply{}, FailureOf(last).Err()
		case EventCanceled:
			return chats.Reply{}, apperr.New(apperr.Conflict, "run_canceled", fmt.Sprintf("The run %s was canceled before it answered.", e.ID))
		}
	}
	// The tools as they are name the steps of a run not done yet (a run of a version whose tools
	// differ shows its own tools' steps once done).
	set, err := s.tools.For(ctx, e.ProjectID, e.BotID, nil)
	if err != nil {
		return chats.Reply{}, err
	}
	return set.withFiles(e.Request.Workspace).reply(e, nil), nil
}

// Approval is the user's decision on the tool call a run waits for: by executionId, or, as
// BoostGPT's clients send it, by chat_id and tool_calls.
type Approval struct {
	ExecutionID string `json:"executionId"`
	Approve     *bool  `json:"approve"`
	// Parameters, when given, replace the arguments the model chose.
	Parameters json.RawMessage `json:"parameters"`
	// ProviderKey is used for the rest of the run (it is not kept).
	ProviderKey string `json:"provider_key"`
	// ChatID names the chat whose paused run is decided, when ExecutionID is empty.
	ChatID string `json:"chat_id"`
	// ToolCalls are the client's form of the decision: the first one is the call the run waits
	// for (approve defaults to true), with its parameters (or arguments).
	ToolCalls []ToolCallInput `json:"tool_calls"`
}

// ToolCallInput is a tool call as BoostGPT's clients send it for approval.
type ToolCallInput struct {
	ID         string          `json:"id"`
	ToolName   string          `json:"tool_name"`
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
	Arguments  json.RawMessage `json:"arguments"`
	Approve    *bool           `json:"approve"`
}

// normalise turns the client's tool_calls form into the decision's own fields.
func (a *Approval) normalise() {
	if len(a.ToolCalls) == 0 {
		return
	}
	c := a.ToolCalls[0]
	if a.Approve == nil {
		a.Approve = c.Approve
	}
	if a.Approve == nil {
		yes := true
		a.Approve = &yes
	}
	if len(a.Parameters) == 0 {
		a.Parameters = c.Parameters
	}
	if len(a.Parameters) == 0 {
		a.Parameters = c.Arguments
	}
	// Arguments may come as a JSON object, or as the text of one (OpenAI's form).
	var text string
	if json.Unmarshal(a.Parameters, &text) == nil {
		a.Parameters = json.RawMessage(text)
	}
}

// Decide records the approval of the tool call the execution waits for and queues the run
// again. An execution that waits for no decision is a Conflict.
func (s *Service) Decide(ctx context.Context, projectID, botID string, a Approval) (Execution, error) {
	a.normalise()
	var p apperr.Problems
	if a.Approve == nil {
		p.Add("approve", "is required: true runs the tool, false rejects it")
	}
	params := strings.TrimSpace(string(a.Parameters))
	if params == "null" {
		params = ""
	}
	if params != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(params), &obj); err != nil {
			p.Add("parameters", "must be a JSON object of the tool's arguments")
		}
	}
	if strings.TrimSpace(a.ExecutionID) == "" && strings.TrimSpace(a.ChatID) == "" {
		p.Add("executionId", "is required (or chat_id, to decide on that chat's paused run)")
	}
	if err := p.Err(); err != nil {
		return Execution{}, err
	}
	var e Execution
	var err error
	if strings.TrimSpace(a.ExecutionID) != "" {
		e, err = s.Get(ctx, projectID, botID, a.ExecutionID)
	} else {
		e, err = s.repo.Waiting(ctx, projectID, botID, strings.TrimSpace(a.ChatID))
	}
	if err != nil {
		return Execution{}, err
	}
	if e.Status != StatusApproval || e.Pending == nil || e.Pending.Decided {
		return Execution{}, notWaiting(e)
	}
	if len(a.ToolCalls) > 0 {
		if name := cmp.Or(a.ToolCalls[0].ToolName, a.ToolCalls[0].Name); name != "" && name != e.Pending.Tool && name != e.Pending.Operation {
			return Execution{}, apperr.Invalidf("tool_calls[0].tool_name", "the run waits for %s, not %s", e.Pending.Tool, name)
		}
	}
	args := e.Pending.Arguments
	if params != "" {
		args = params
	}
	ok, err := s.repo.Decide(ctx, projectID, botID, e.ID, e.Pending.Cycle, *a.Approve, args, s.now())
	if err != nil {
		return Execution{}, err
	}
	if !ok {
		return Execution{}, notWaiting(e)
	}
	return e, s.queue.Enqueue(ctx, tasks.NewAgentRunResumeTask(tasks.AgentRunPayload{ExecutionID: e.ID, ProviderKey: a.ProviderKey}, e.Pending.Cycle))
}

// Cancel cancels the agent's run id: one queued or waiting for an approval ends canceled now;
// one running at its worker's next write or lease renewal, where the worker learns of the
// cancel kept with the run (it may run in another process). It returns the run as it then is.
// A run that ended already, or one a heartbeat, a channel or an email started (its origin
// settles it), is a Conflict, run_not_cancelable.
func (s *Service) Cancel(ctx context.Context, projectID, botID, id string) (Execution, error) {
	e, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return e, err
	}
	if e.Origin != "" {
		return e, apperr.New(apperr.Conflict, "run_not_cancelable", fmt.Sprintf("The run %s was started by a %s, which settles it: it is not canceled.", e.ID, e.Origin))
	}
	raw, _ := json.Marshal(map[string]any{})
	e, changed, err := s.repo.Cancel(ctx, e, Entry{Event: EventCanceled, Data: string(raw)}, s.now())
	switch {
	case err != nil:
		return e, err
	case !changed:
		return e, apperr.New(apperr.Conflict, "run_not_cancelable", fmt.Sprintf("The run %s ended already (it is %s): it cannot be canceled.", e.ID, e.Status))
	}
	if last, ok := e.stop(); ok && e.Status == StatusCanceled {
		s.relay.Notify(ctx, e.ID, noticeOf(last))
	}
	return e, nil
}

// staleAfter is how long a queued run may wait, or an expired lease stay unclaimed, before the
// reconciler queues its task again.
const staleAfter = time.Minute

// Requeue queues again the runs whose task may be lost (the enqueue failed while Redis was
// down, or the task ended without the run ending): queued for a minute, or with a lease expired
// for a minute. Task ids are per run and minute, so schedulers running it together queue one.
// It also moves out of the live ones the runs that ended but were not moved.
func (s *Service) Requeue(ctx context.Context, now time.Time) (int, error) {
	if _, err := s.repo.MoveEnded(ctx, 500); err != nil {
		return 0, err
	}
	ids, err := s.repo.Stale(ctx, now.Add(-staleAfter), now.Add(-staleAfter), 500)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := s.queue.Enqueue(ctx, tasks.NewAgentRunRequeueTask(id, now)); err != nil {
			return 0, err
		}
	}
	if len(ids) > 0 {
		s.log.Info("agent runs queued again", "count", len(ids))
	}
	return len(ids), nil
}

func notWaiting(e Execution) error {
	return apperr.New(apperr.Conflict, "execution_not_awaiting_approval",
		fmt.Sprintf("The execution %s is not waiting for an approval (it is %s); it was decided already or never asked.", e.ID, e.Status))
}

// reply is the chat object of e: with its answer when answer is set, else waiting for an
// approval or still running.
func (tb *Toolbox) reply(e Execution, answer *chats.Message) chats.Reply {
	cycles, executed := make([]any, len(e.Cycles)), []any{}
	for i, c := range e.Cycles {
		cycles[i] = c
		if t, ok := tb.Lookup(c.Action); ok {
			executed = append(executed, map[string]any{"name": t.Operation, "server_label": t.ServerLabel, "cycle": c.Cycle,
				"input": c.ActionInput, "success": c.ActionSuccess})
		}
	}
	a := chats.Answered{Kind: "agent", Usage: chats.UsageOf(e.Usage.provider(), "agent", e.User.Seq), Context: chats.PassageContext(passages(e.Cycles)),
		Steps: len(e.Cycles), Cycles: len(e.Cycles), Reasoning: cycles, Executed: executed, Tools: len(tb.tools), ExecutionID: e.ID,
		Capped: e.Capped, At: e.UpdatedAt}
	switch p := e.Pending; {
	case answer != nil:
		a.Agent, a.Done, a.Sources = *answer, true, answer.Sources
		a.Usage.ConversationCount = answer.Seq
		a.StepInfo = fmt.Sprintf("Answered after %d cycles and %d model calls.", len(e.Cycles), e.Calls)
		if len(e.Plan) > 0 {
			a.Steps = len(e.Plan)
			a.StepInfo = fmt.Sprintf("Carried out the plan's %d steps in %d model calls.", len(e.Plan), e.Calls)
		}
		return chats.NewReply(e.ChatID, e.User, e.Started, a)
	case p != nil && !p.Decided && e.Status == StatusApproval:
		var params map[string]any
		_ = json.Unmarshal([]byte(p.Arguments), &params)
		tool := chats.Tool{Name: p.Tool, ServerLabel: builtin, Reasoning: p.Thought, Parameters: params}
		if p.Operation != "" {
			tool.Name, tool.ServerLabel = p.Operation, p.Label
		}
		if t, ok := tb.Lookup(p.Tool); ok {
			tool.Description = t.Description
		}
		a.Tool = &tool
		a.StepInfo = fmt.Sprintf("Cycle %d waits for approval to run %s.", p.Cycle, p.Tool)
	case len(e.Plan) > 0:
		a.StepInfo = e.stepInfo()
	default:
		a.StepInfo = fmt.Sprintf("Running: %d cycles done.", len(e.Cycles))
	}
	a.Agent = chats.Message{ChatID: e.ChatID, Role: chats.RoleAgent, Model: e.User.Model, Complexity: e.User.Complexity,
		ReasoningType: "agent", EstimatedTimeMS: "0", EstimatedCost: "0.000000", Channel: cmp.Or(e.User.Channel, "api"), CreditUsed: fmt.Sprint(e.Calls),
		Reasoning: map[string]any{"executionId": e.ID}, Preference: e.User.Preference, Sources: []memory.Ref{},
		IsToolExecuting: true, CreatedAt: e.UpdatedAt, UpdatedAt: e.UpdatedAt}
	return chats.NewReply(e.ChatID, e.User, e.Started, a)
}

// stepInfo says which step of its plan the run is carrying out.
func (e Execution) stepInfo() string {
	i := min(e.Step, len(e.Plan)-1)
	return fmt.Sprintf("Step %d of %d: %s", i+1, len(e.Plan), e.Plan[i])
}

package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// tasks answers the A2A methods for the agent a request reaches: a task is one of its runs, read
// from the store, so any replica answers for any task.
type tasks struct {
	door *Door
}

var _ a2asrv.RequestHandler = (*tasks)(nil)

// answerArtifact names the artifact that holds the agent's answer.
const answerArtifact a2a.ArtifactID = "answer"

// errStopped ends a follow whose client went away.
var errStopped = errors.New("a2a: the client stopped reading")

// SendMessage starts a turn (or decides the tool call a task waits for) and waits, within the
// run wait, for the run to answer or to ask for input; one that asks to return immediately (0.3's
// blocking false) is answered at once.
func (t *tasks) SendMessage(ctx context.Context, params *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	f, answer, err := t.start(ctx, params)
	if err != nil || answer != nil {
		return answer, err
	}
	defer f.Close()
	e := f.Run
	if params.Config == nil || !params.Config.ReturnImmediately {
		wait, cancel := context.WithTimeout(ctx, t.door.RunWait)
		defer cancel()
		e, err = f.Follow(wait, 0, func(agentruns.Entry) error { return nil }, nil)
		if err != nil && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
			return nil, t.rpcError(err, a2a.ErrInvalidParams)
		}
	}
	return t.task(ctx, e)
}

// SendStreamingMessage starts a turn (or decides the tool call a task waits for) and streams the
// task: the task as it starts, working while the run reasons, the answer as an artifact and the
// final status (completed, input-required, failed or canceled).
func (t *tasks) SendStreamingMessage(ctx context.Context, params *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		f, answer, err := t.start(ctx, params)
		if err != nil {
			yield(nil, err)
			return
		}
		if answer != nil {
			yield(answer.(a2a.Event), nil)
			return
		}
		defer f.Close()
		e := f.Run
		// A new task is streamed from its start, submitted, even when a worker took its run before
		// it was read here: then its work is the next event.
		first, taken := e, params.Message.TaskID == "" && e.Status == agentruns.StatusRunning
		if taken {
			first.Status = agentruns.StatusQueued
		}
		task, err := t.task(ctx, first)
		if err != nil || !yield(task, nil) {
			return
		}
		t.stream(ctx, f, len(e.Log), params.Message.TaskID != "" || taken, yield)
	}
}

// SubscribeToTask streams a task from where it stands: the task, then, while it is not waiting
// or over, its progress as SendStreamingMessage gives it.
func (t *tasks) SubscribeToTask(ctx context.Context, params *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		f, err := t.open(ctx, params.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		defer f.Close()
		task, err := t.task(ctx, f.Run)
		if err != nil || !yield(task, nil) || task.Status.State.Terminal() || task.Status.State == a2a.TaskStateInputRequired {
			return
		}
		t.stream(ctx, f, len(f.Run.Log), false, yield)
	}
}

// GetTask reads a task: its status, the answer's artifact when done, and the message that
// started it.
func (t *tasks) GetTask(ctx context.Context, query *a2a.GetTaskRequest) (*a2a.Task, error) {
	e, err := t.run(ctx, query.ID)
	if err != nil {
		return nil, err
	}
	return t.task(ctx, e)
}

// ListTasks refuses: an agent's tasks are its runs, listed by the agent API.
func (t *tasks) ListTasks(context.Context, *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return nil, fmt.Errorf("%w: tasks are not listed; read one by its id", a2a.ErrUnsupportedOperation)
}

// CancelTask cancels the task's run: one submitted or waiting for input ends canceled at once,
// one working at its worker's next write or lease renewal (it is answered working, and ends
// canceled). A task over already is not cancelable.
func (t *tasks) CancelTask(ctx context.Context, params *a2a.CancelTaskRequest) (*a2a.Task, error) {
	a := callerOf(ctx)
	e, err := t.door.Runs.Cancel(ctx, a.bot.ProjectID, a.bot.ID, string(params.ID))
	if apperr.As(err).Code == "run_not_cancelable" {
		return nil, fmt.Errorf("%w: %s", a2a.ErrTaskNotCancelable, apperr.As(err).Message)
	}
	if err != nil {
		return nil, t.rpcError(err, a2a.ErrTaskNotFound)
	}
	return t.task(ctx, e)
}

// GetTaskPushConfig refuses: push notifications are not offered.
func (t *tasks) GetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// ListTaskPushConfigs refuses: push notifications are not offered.
func (t *tasks) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// CreateTaskPushConfig refuses: push notifications are not offered.
func (t *tasks) CreateTaskPushConfig(context.Context, *a2a.PushConfig) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// DeleteTaskPushConfig refuses: push notifications are not offered.
func (t *tasks) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return a2a.ErrPushNotificationNotSupported
}

// GetExtendedAgentCard refuses: the card at the well-known path is already the one for the
// account's keys.
func (t *tasks) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.ErrExtendedCardNotConfigured
}

// start carries out what a message asks: without a taskId, a turn of the agent in the chat its
// contextId names (a new chat without one), always as an agent run; with a taskId, the decision
// on the tool call that task waits for. A turn answered without a run (a chat a person of the
// team has taken over) is answered as a message.
func (t *tasks) start(ctx context.Context, params *a2a.SendMessageRequest) (*agentruns.Following, a2a.SendMessageResult, error) {
	if params == nil || params.Message == nil {
		return nil, nil, fmt.Errorf("%w: message is required", a2a.ErrInvalidParams)
	}
	msg, a := params.Message, callerOf(ctx)
	if msg.TaskID != "" {
		if err := t.decide(ctx, msg); err != nil {
			return nil, nil, err
		}
		f, err := t.open(ctx, msg.TaskID) // as decided: queued again
		return f, nil, err
	}
	text := textOf(msg)
	if text == "" {
		return nil, nil, fmt.Errorf("%w: the message has no text part: say what to ask the agent", a2a.ErrInvalidParams)
	}
	if err := t.door.AgentAllow(ctx, a.bot, a.keyID); err != nil {
		return nil, nil, t.rpcError(err, a2a.ErrInvalidParams)
	}
	// The run carries the hop it answers, so that the remote agents it calls are a hop further.
	in := chats.Input{Message: &text, ChatID: msg.ContextID, ReasoningMode: "agent", Hop: a.hop}
	out, err := t.door.Chats.Chat(ctx, a.bot.ProjectID, a.bot, chats.Asker{AccountID: a.accountID, ForEndUsers: true}, in, nil)
	if err != nil {
		return nil, nil, t.rpcError(err, a2a.ErrInvalidParams)
	}
	if out.RunID == "" {
		answer := &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleAgent, ContextID: out.Reply.ChatID,
			Parts: a2a.ContentParts{a2a.NewTextPart(out.Reply.Reply)}}
		return nil, answer, nil
	}
	f, err := t.door.Runs.Open(ctx, a.bot.ProjectID, a.bot.ID, out.RunID)
	return f, nil, t.rpcError(err, a2a.ErrInvalidParams)
}

// decide records the decision a message brings on the tool call its task waits for: its text
// approve or reject, or a data part {"approve": true|false}.
func (t *tasks) decide(ctx context.Context, msg *a2a.Message) error {
	e, err := t.run(ctx, msg.TaskID)
	if err != nil {
		return err
	}
	if msg.ContextID != "" && msg.ContextID != e.ChatID {
		return fmt.Errorf("%w: the task %s is of the context %s, not %s", a2a.ErrInvalidParams, e.ID, e.ChatID, msg.ContextID)
	}
	if e.Status != agentruns.StatusApproval {
		return fmt.Errorf("%w: the task %s does not wait for input (its run is %s): start a new task, with its contextId to go on with the conversation",
			a2a.ErrInvalidParams, e.ID, e.Status)
	}
	approve, ok := decisionOf(msg)
	if !ok {
		return fmt.Errorf("%w: the task waits for a decision on its tool call: answer approve or reject (or a data part {\"approve\": true})",
			a2a.ErrInvalidParams)
	}
	a := callerOf(ctx)
	_, err = t.door.Runs.Decide(ctx, a.bot.ProjectID, a.bot.ID, agentruns.Approval{ExecutionID: e.ID, Approve: &approve})
	return t.rpcError(err, a2a.ErrTaskNotFound)
}

// decisionOf reads a decision from a message: a data part's approve, or a text of approve or
// reject (yes or no).
func decisionOf(msg *a2a.Message) (approve, ok bool) {
	for _, p := range msg.Parts {
		if d, isData := p.Data().(map[string]any); isData {
			if v, isBool := d["approve"].(bool); isBool {
				return v, true
			}
		}
	}
	switch strings.ToLower(strings.Trim(textOf(msg), " .!\n\t")) {
	case "approve", "approved", "yes":
		return true, true
	case "reject", "rejected", "no":
		return false, true
	}
	return false, false
}

// textOf is the text of a message's text parts.
func textOf(msg *a2a.Message) string {
	var texts []string
	for _, p := range msg.Parts {
		if _, ok := p.Content.(a2a.Text); ok {
			texts = append(texts, p.Text())
		}
	}
	return strings.TrimSpace(strings.Join(texts, "\n"))
}

// run reads the task id of the caller's agent: another agent's run, or none, is not found.
func (t *tasks) run(ctx context.Context, id a2a.TaskID) (agentruns.Execution, error) {
	if strings.TrimSpace(string(id)) == "" {
		return agentruns.Execution{}, fmt.Errorf("%w: the task id is required", a2a.ErrInvalidParams)
	}
	a := callerOf(ctx)
	e, err := t.door.Runs.Get(ctx, a.bot.ProjectID, a.bot.ID, string(id))
	return e, t.rpcError(err, a2a.ErrTaskNotFound)
}

// open reads the task id of the caller's agent to follow it (agentruns.Service.Open): another
// agent's run, or none, is not found.
func (t *tasks) open(ctx context.Context, id a2a.TaskID) (*agentruns.Following, error) {
	if strings.TrimSpace(string(id)) == "" {
		return nil, fmt.Errorf("%w: the task id is required", a2a.ErrInvalidParams)
	}
	a := callerOf(ctx)
	f, err := t.door.Runs.Open(ctx, a.bot.ProjectID, a.bot.ID, string(id))
	return f, t.rpcError(err, a2a.ErrTaskNotFound)
}

// stream follows the run f from its entry after, yielding working as it reasons, then the
// answer's artifact and the final status. resumed says a decision set the run going again: it
// is working from the start.
func (t *tasks) stream(ctx context.Context, f *agentruns.Following, after int, resumed bool, yield func(a2a.Event, error) bool) {
	e, working := f.Run, false
	work := func() error {
		working = true
		if !yield(a2a.NewStatusUpdateEvent(infoOf(e), a2a.TaskStateWorking, nil), nil) {
			return errStopped
		}
		return nil
	}
	if resumed {
		if work() != nil {
			return
		}
	}
	emit := func(en agentruns.Entry) error {
		if en.Event == agentruns.EventCycle || en.Event == agentruns.EventStep {
			return work()
		}
		return nil
	}
	delta := func(string) error {
		if working {
			return nil
		}
		return work()
	}
	e, err := f.Follow(ctx, after, emit, delta)
	if err != nil {
		if !errors.Is(err, errStopped) && ctx.Err() == nil {
			yield(nil, t.rpcError(err, a2a.ErrTaskNotFound))
		}
		return
	}
	task, err := t.task(ctx, e)
	if err != nil {
		yield(nil, err)
		return
	}
	for _, art := range task.Artifacts {
		if !yield(&a2a.TaskArtifactUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Artifact: art, LastChunk: true}, nil) {
			return
		}
	}
	yield(&a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Status: task.Status}, nil)
}

// task is the A2A task of the run e: its state, with the agent's answer as the status message
// and an artifact when it is done, the tool call it waits for when it asks for input, the
// failure when it failed.
func (t *tasks) task(ctx context.Context, e agentruns.Execution) (*a2a.Task, error) {
	info := infoOf(e)
	task := &a2a.Task{ID: info.TaskID, ContextID: info.ContextID,
		History: []*a2a.Message{{ID: e.ID + ":user", Role: a2a.MessageRoleUser, TaskID: info.TaskID, ContextID: info.ContextID,
			Parts: a2a.ContentParts{a2a.NewTextPart(e.Request.Message)}}}}
	at := e.UpdatedAt
	task.Status.Timestamp = &at
	say := func(text string) *a2a.Message {
		return a2a.NewMessageForTask(a2a.MessageRoleAgent, info, a2a.NewTextPart(text))
	}
	switch e.Status {
	case agentruns.StatusQueued:
		task.Status.State = a2a.TaskStateSubmitted
	case agentruns.StatusRunning:
		task.Status.State = a2a.TaskStateWorking
	case agentruns.StatusCanceled:
		task.Status.State, task.Status.Message = a2a.TaskStateCanceled, say("The task was canceled before the agent answered.")
	case agentruns.StatusFailed:
		_, err := t.door.Runs.Reply(ctx, e)
		task.Status.State, task.Status.Message = a2a.TaskStateFailed, say(apperr.As(err).Message)
	case agentruns.StatusApproval, agentruns.StatusDone:
		reply, err := t.door.Runs.Reply(ctx, e)
		if err != nil {
			return nil, t.rpcError(err, a2a.ErrTaskNotFound)
		}
		switch {
		case reply.IsComplete:
			task.Status.State, task.Status.Message = a2a.TaskStateCompleted, say(reply.Reply)
			task.Artifacts = []*a2a.Artifact{{ID: answerArtifact, Name: "answer", Parts: a2a.ContentParts{a2a.NewTextPart(reply.Reply)}}}
		case reply.RequiresApprove && reply.Tool != nil:
			args, _ := json.Marshal(reply.Tool.Parameters)
			task.Status.State = a2a.TaskStateInputRequired
			task.Status.Message = say(fmt.Sprintf("The agent waits for approval to run %s with %s. Answer approve or reject in a message with this taskId.",
				reply.Tool.Name, args))
			task.Status.Message.Parts = append(task.Status.Message.Parts, a2a.NewDataPart(map[string]any{
				"tool": reply.Tool.Name, "server_label": reply.Tool.ServerLabel, "parameters": reply.Tool.Parameters}))
		default:
			task.Status.State = a2a.TaskStateWorking
		}
	default:
		task.Status.State = a2a.TaskStateUnspecified
	}
	return task, nil
}

// runInfo is the task and context of a run.
type runInfo a2a.TaskInfo

// TaskInfo is the task and context of the run.
func (r runInfo) TaskInfo() a2a.TaskInfo { return a2a.TaskInfo(r) }

// infoOf is the task and context of the run e.
func infoOf(e agentruns.Execution) runInfo {
	return runInfo{TaskID: a2a.TaskID(e.ID), ContextID: e.ChatID}
}

// rpcError is err as the JSON-RPC error the SDK answers: not found as notFound, bad input as
// invalid params, an internal error without what it wraps, and anything else (a rate limit, a
// model provider or a store down) as a server error with its code and message.
func (t *tasks) rpcError(err error, notFound error) error {
	if err == nil {
		return nil
	}
	e := apperr.As(err)
	switch e.Kind {
	case apperr.NotFound:
		return fmt.Errorf("%w: %s", notFound, e.Message)
	case apperr.Invalid, apperr.Malformed, apperr.Conflict, apperr.TooLarge:
		return fmt.Errorf("%w: %s", a2a.ErrInvalidParams, e.Message)
	case apperr.Internal:
		t.door.Log.Error("a2a: internal error", "error", err)
		return a2a.ErrInternalError
	}
	return fmt.Errorf("%w: %s: %s", a2a.ErrServerError, e.Code, e.Message)
}

// Package outbox is the domain event envelope and the rule that carries it: an event rides in
// the "_outbox" object (keyed by event id) of the document whose change it describes, written by
// the same single-document update, so a committed change always has its event. A publisher removes the
// event from the document once NATS has acknowledged it; a relay publishes what is left behind.
package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/agentplane/agentplane/shared/kit/ids"
)

// Field is the document field that holds a document's unpublished events.
const Field = "_outbox"

// Event is a domain event: the envelope of the stream. ID is a UUIDv7, also the JetStream
// message id, so a publish repeated by the relay is dropped by the stream's duplicate window and
// consumers can dedupe by it.
type Event struct {
	ID         string          `json:"id" bson:"id"`
	Type       string          `json:"type" bson:"type"`
	ProjectID  string          `json:"project_id" bson:"project_id"`
	BotID      string          `json:"bot_id" bson:"bot_id"`
	OccurredAt time.Time       `json:"occurred_at" bson:"occurred_at"`
	Data       json.RawMessage `json:"data" bson:"data"`
	// Cause lists the workflows whose runs led to the change, oldest first; empty for changes
	// made by requests.
	Cause []string `json:"cause,omitempty" bson:"cause,omitempty"`
	// Omitted names the fields of data left out to keep the event under MaxData, largest
	// first: a consumer that needs them reads the resource by its id.
	Omitted []string `json:"omitted,omitempty" bson:"omitted,omitempty"`
	// Trace is the trace context of the change (W3C traceparent, tracestate, baggage), kept
	// with the event in its document and sent in the headers of its message, so that what the
	// event starts joins the change's trace. It is not part of the envelope users see.
	Trace map[string]string `json:"-" bson:"trace,omitempty"`
}

type causeKey struct{}

// WithCause returns ctx for changes made by the run of the last workflow of chain (the
// workflows that led to it, oldest first): their events carry chain as their cause.
func WithCause(ctx context.Context, chain []string) context.Context {
	return context.WithValue(ctx, causeKey{}, chain)
}

// MaxData bounds the JSON of an event's data: events carry ids and small fields, so that every
// event fits a message of the stream (NATS allows 1 MiB by default) whatever the resource holds.
const MaxData = 32 << 10

// New returns an event of type typ about data (the changed resource as users see it, a JSON
// object), caused by what ctx says (WithCause), in the trace of ctx. When data is larger than
// MaxData, its largest fields are left out and named in Omitted.
func New(ctx context.Context, typ, projectID, botID string, data any) Event {
	raw, err := json.Marshal(data)
	if err != nil {
		panic("outbox: event data must marshal to JSON: " + err.Error())
	}
	raw, omitted := bound(raw)
	cause, _ := ctx.Value(causeKey{}).([]string)
	trace := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, trace)
	ev := Event{
		ID:         ids.New(),
		Type:       typ,
		ProjectID:  projectID,
		BotID:      botID,
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond),
		Data:       raw,
		Cause:      cause,
		Omitted:    omitted,
	}
	if len(trace) > 0 {
		ev.Trace = trace
	}
	return ev
}

// bound returns raw, a JSON object as json.Marshal writes it, without its largest fields while
// it is larger than MaxData, and the names of the fields it left out, largest first (of equal
// sizes, by name). What it leaves is the object of the fields kept, in the order of their
// names, as json.Marshal writes a map of them. The fields are found by a scan of raw's top
// level, not by decoding it: an event's resource may hold hundreds of kilobytes.
func bound(raw json.RawMessage) (json.RawMessage, []string) {
	if len(raw) <= MaxData {
		return raw, nil
	}
	fields := members(raw)
	bySize := slices.Clone(fields)
	slices.SortFunc(bySize, func(a, b member) int {
		return cmp.Or(cmp.Compare(len(b.value), len(a.value)), strings.Compare(a.name, b.name))
	})
	size := len(raw)
	left := map[string]bool{}
	var omitted []string
	for _, f := range bySize {
		if size <= MaxData {
			break
		}
		size -= len(f.field) + 1 // and its comma
		left[f.name] = true
		omitted = append(omitted, f.name)
	}
	slices.SortFunc(fields, func(a, b member) int { return strings.Compare(a.name, b.name) })
	out := make(json.RawMessage, 0, max(size, 2))
	out = append(out, '{')
	for _, f := range fields {
		if left[f.name] {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, f.field...)
	}
	return append(out, '}'), omitted
}

// member is one field of a JSON object: its name, and its text (`"name":value`) and value's.
type member struct {
	name         string
	field, value []byte
}

// members returns the fields of the JSON object raw, each name once (its last field, as
// decoding keeps).
func members(raw []byte) []member {
	var out []member
	at := map[string]int{}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		panic("outbox: event data must be a JSON object")
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		start := i
		keyEnd := skipValue(raw, i)
		var name string
		if err := json.Unmarshal(raw[i:keyEnd], &name); err != nil {
			panic("outbox: event data must be a JSON object: " + err.Error())
		}
		i = skipSpace(raw, keyEnd)
		if i >= len(raw) || raw[i] != ':' {
			panic("outbox: event data must be a JSON object")
		}
		valueStart := skipSpace(raw, i+1)
		i = skipValue(raw, valueStart)
		m := member{name: name, field: raw[start:i], value: raw[valueStart:i]}
		if k, ok := at[name]; ok {
			out[k] = m
		} else {
			at[name] = len(out)
			out = append(out, m)
		}
		i = skipSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out
}

// skipSpace returns the offset of the first byte of raw from i that is not JSON white space.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value of valid JSON raw that starts at i.
func skipValue(raw []byte, i int) int {
	depth := 0
	for ; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return i
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		if depth == 0 && (raw[i] == '"' || raw[i] == '}' || raw[i] == ']') {
			return i + 1
		}
	}
	return i
}

// The event types the platform emits. Workflows may trigger on any of them.
const (
	BotCreated           = "bot.created"
	BotUpdated           = "bot.updated"
	BotDeleted           = "bot.deleted"
	CalendarUpdated      = "calendar.updated"
	BookingCreated       = "booking.created"
	ContactCreated       = "contact.created"
	ContactUpdated       = "contact.updated"
	ContactDeleted       = "contact.deleted"
	PipelineCreated      = "pipeline.created"
	PipelineUpdated      = "pipeline.updated"
	PipelineDeleted      = "pipeline.deleted"
	StageCreated         = "stage.created"
	StageUpdated         = "stage.updated"
	StageDeleted         = "stage.deleted"
	TaskCreated          = "task.created"
	TaskUpdated          = "task.updated"
	TaskDeleted          = "task.deleted"
	TaskDue              = "task.due"
	ChatUpdated          = "chat.updated"
	ChatMessageUpdated   = "chat.message.updated"
	ChatMessageDeleted   = "chat.message.deleted"
	DealCreated          = "deal.created"
	DealUpdated          = "deal.updated"
	DealStageChanged     = "deal.stage_changed"
	DealWon              = "deal.won"
	DealLost             = "deal.lost"
	DealDeleted          = "deal.deleted"
	WorkflowCreated      = "workflow.created"
	WorkflowUpdated      = "workflow.updated"
	WorkflowDeleted      = "workflow.deleted"
	WorkflowRunSucceeded = "workflow.run.succeeded"
	WorkflowRunFailed    = "workflow.run.failed"
	ChatMessageCreated   = "chat.message.created"
	SourceCreated        = "source.created"
	SourceReady          = "source.ready"
	SourceFailed         = "source.failed"
	SourceUpdated        = "source.updated"
	SourceSynced         = "source.synced"
	SourceExpired        = "source.expired"
	SourceDeleted        = "source.deleted"
	HeartbeatCompleted   = "heartbeat.completed"
	HeartbeatFailed      = "heartbeat.failed"
	HeartbeatPaused      = "heartbeat.paused"
	HeartbeatDisabled    = "heartbeat.disabled"
	// A channel's: a message taken from its platform, an answer its platform took, an answer
	// it refused for good.
	ChannelMessageReceived = "channel.message.received"
	ChannelMessageSent     = "channel.message.sent"
	ChannelFailed          = "channel.failed"
	// An agent's inbox's: an email received, an answer sent, an answer that could not be.
	EmailReceived = "email.received"
	EmailReplied  = "email.replied"
	EmailFailed   = "email.failed"
	// A chat's handoff to a person: asked for, assigned to an operator, taken over, handed back
	// to the agent, closed.
	HandoffRequested = "handoff.requested"
	HandoffAssigned  = "handoff.assigned"
	HandoffTaken     = "handoff.taken"
	HandoffReleased  = "handoff.released"
	HandoffClosed    = "handoff.closed"
)

// Types lists every event type, for validation and documentation.
var Types = []string{
	BotCreated, BotUpdated, BotDeleted, CalendarUpdated, BookingCreated,
	DealCreated, DealUpdated, DealStageChanged, DealWon, DealLost, DealDeleted,
	ContactCreated, ContactUpdated, ContactDeleted, PipelineCreated, PipelineUpdated, PipelineDeleted,
	StageCreated, StageUpdated, StageDeleted, TaskCreated, TaskUpdated, TaskDeleted, TaskDue,
	WorkflowCreated, WorkflowUpdated, WorkflowDeleted, WorkflowRunSucceeded, WorkflowRunFailed,
	ChatMessageCreated, ChatUpdated, ChatMessageUpdated, ChatMessageDeleted,
	SourceCreated, SourceReady, SourceFailed, SourceUpdated, SourceSynced, SourceExpired, SourceDeleted,
	HeartbeatCompleted, HeartbeatFailed, HeartbeatPaused, HeartbeatDisabled,
	ChannelMessageReceived, ChannelMessageSent, ChannelFailed,
	EmailReceived, EmailReplied, EmailFailed,
	HandoffRequested, HandoffAssigned, HandoffTaken, HandoffReleased, HandoffClosed,
}

// Package outbox is the domain event envelope and the rule that carries it: an event rides in
// the "_outbox" object (keyed by event id) of the document whose change it describes, written by
// the same single-document update, so a committed change always has its event. A publisher removes the
// event from the document once NATS has acknowledged it; a relay publishes what is left behind.
package outbox

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
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
}

// New returns an event of type typ about data (the changed resource as users see it).
func New(typ, projectID, botID string, data any) Event {
	raw, err := json.Marshal(data)
	if err != nil {
		panic("outbox: event data must marshal to JSON: " + err.Error())
	}
	return Event{
		ID:         uuid.Must(uuid.NewV7()).String(),
		Type:       typ,
		ProjectID:  projectID,
		BotID:      botID,
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond),
		Data:       raw,
	}
}

// The event types the platform emits. Workflows may trigger on any of them.
const (
	BotCreated         = "bot.created"
	BotUpdated         = "bot.updated"
	BotDeleted         = "bot.deleted"
	CalendarUpdated    = "calendar.updated"
	DealCreated        = "deal.created"
	DealUpdated        = "deal.updated"
	DealStageChanged   = "deal.stage_changed"
	DealWon            = "deal.won"
	DealLost           = "deal.lost"
	DealDeleted        = "deal.deleted"
	WorkflowCreated    = "workflow.created"
	WorkflowUpdated    = "workflow.updated"
	WorkflowDeleted    = "workflow.deleted"
	ChatMessageCreated = "chat.message.created"
	SourceCreated      = "source.created"
	SourceReady        = "source.ready"
	SourceFailed       = "source.failed"
	SourceUpdated      = "source.updated"
	SourceSynced       = "source.synced"
	SourceExpired      = "source.expired"
	SourceDeleted      = "source.deleted"
)

// Types lists every event type, for validation and documentation.
var Types = []string{
	BotCreated, BotUpdated, BotDeleted, CalendarUpdated,
	DealCreated, DealUpdated, DealStageChanged, DealWon, DealLost, DealDeleted,
	WorkflowCreated, WorkflowUpdated, WorkflowDeleted,
	ChatMessageCreated,
	SourceCreated, SourceReady, SourceFailed, SourceUpdated, SourceSynced, SourceExpired, SourceDeleted,
}

// Package workflows holds the schema of workflow definitions ("when X happens, if conditions
// hold, do these actions") and their validation. Running definitions is the engine's job.
package workflows

import (
	"time"

	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// Definition is a stored workflow: a trigger, conditions on the triggering event and the
// actions to run when they all hold.
type Definition struct {
	// TriggerType is one of TriggerTypes.
	TriggerType string `json:"trigger_type" bson:"trigger_type"`
	// TriggerEvent is the event type that starts an event-triggered workflow.
	TriggerEvent string `json:"trigger_event" bson:"trigger_event"`
	// TriggerConfig configures the trigger; schedule triggers take "cron" and "timezone".
	TriggerConfig freeform.Object `json:"trigger_config" bson:"trigger_config"`
	// Conditions must all hold for the actions to run.
	Conditions []Condition `json:"conditions" bson:"conditions"`
	// Actions run in order.
	Actions []Action `json:"actions" bson:"actions"`
}

// Condition compares one field of the event envelope with a value.
type Condition struct {
	// Field is a dot path into the event envelope, such as "data.status" or "bot_id".
	Field string `json:"field" bson:"field"`
	// Operator is one of Operators.
	Operator string `json:"operator" bson:"operator"`
	// Value is the operand; its type depends on Operator.
	Value freeform.Value `json:"value" bson:"value"`
}

// Action is one step of a workflow.
type Action struct {
	// Type is one of ActionTypes.
	Type string `json:"type" bson:"type"`
	// Params are the settings of the action; ActionParams lists the keys of each type.
	Params freeform.Object `json:"params" bson:"params"`
	// ContinueOnError lets the workflow go on when this action fails.
	ContinueOnError bool `json:"continue_on_error" bson:"continue_on_error"`
}

// The trigger types.
const (
	TriggerTypeEvent    = "event"
	TriggerTypeSchedule = "schedule"
	TriggerTypeManual   = "manual"
)

// TriggerTypes lists the trigger types.
var TriggerTypes = []string{TriggerTypeEvent, TriggerTypeSchedule, TriggerTypeManual}

// The condition operators.
const (
	OpEq       = "eq"
	OpNe       = "ne"
	OpGt       = "gt"
	OpGte      = "gte"
	OpLt       = "lt"
	OpLte      = "lte"
	OpContains = "contains"
	OpIn       = "in"
	OpExists   = "exists"
)

// Operators lists the condition operators.
var Operators = []string{OpEq, OpNe, OpGt, OpGte, OpLt, OpLte, OpContains, OpIn, OpExists}

// The action types.
const (
	ActionWebhook     = "webhook"
	ActionSendMessage = "send_message"
	ActionCreateDeal  = "create_deal"
	ActionUpdateDeal  = "update_deal"
	ActionAddMemory   = "add_memory"
	// ActionRequestHandoff flags a chat of the agent for a person of the team (the inbox).
	ActionRequestHandoff = "request_handoff"
)

// ActionTypes lists the action types.
var ActionTypes = []string{ActionWebhook, ActionSendMessage, ActionCreateDeal, ActionUpdateDeal, ActionAddMemory, ActionRequestHandoff}

// ActionParams lists the params keys each action type accepts.
var ActionParams = map[string][]string{
	ActionWebhook:        {"url", "headers", "body", "timeout_seconds"},
	ActionSendMessage:    {"message", "chat_id", "mode", "channel_id"},
	ActionCreateDeal:     {"title", "value", "currency", "status", "stage", "contact"},
	ActionUpdateDeal:     {"deal_id", "title", "value", "currency", "status", "stage"},
	ActionAddMemory:      {"title", "type", "source", "tags"},
	ActionRequestHandoff: {"chat_id", "reason", "urgency"},
}

// RequiredParams lists the params each action type must have (a test holds the validator to it).
var RequiredParams = map[string][]string{
	ActionWebhook:        {"url"},
	ActionSendMessage:    {"message"},
	ActionCreateDeal:     {"title"},
	ActionUpdateDeal:     {"deal_id"},
	ActionAddMemory:      {"title", "type", "source"},
	ActionRequestHandoff: {"chat_id"},
}

// The modes of send_message: post the message as the agent, or answer it with the chat pipeline.
const (
	MessageModePost  = "post"
	MessageModeReply = "reply"
)

// MessageModes lists the modes of send_message.
var MessageModes = []string{MessageModePost, MessageModeReply}

// The statuses of a deal.
const (
	DealStatusOpen = "open"
	DealStatusWon  = "won"
	DealStatusLost = "lost"
)

// DealStatuses lists the statuses of a deal.
var DealStatuses = []string{DealStatusOpen, DealStatusWon, DealStatusLost}

// UpdatableDealFields lists the deal fields update_deal can set; it must set at least one.
var UpdatableDealFields = []string{"title", "value", "currency", "status", "stage"}

// ContactFields lists the keys of create_deal's contact object.
var ContactFields = []string{"name", "email", "phone", "company"}

// The types of memory add_memory stores.
const (
	MemoryTypeText     = "text"
	MemoryTypeURL      = "url"
	MemoryTypeDocument = "document"
)

// MemoryTypes lists the types of memory add_memory stores.
var MemoryTypes = []string{MemoryTypeText, MemoryTypeURL, MemoryTypeDocument}

// ScheduleConfigKeys lists the keys of a schedule trigger's config.
var ScheduleConfigKeys = []string{"cron", "timezone"}

// FieldPathPattern is the form of a condition's field path.
const FieldPathPattern = `^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$`

// Limits and defaults of definitions.
const (
	MaxConditions   = 20
	MaxActions      = 20
	MaxFieldPathLen = 200
	MaxMessageLen   = 8000
	MaxTags         = 20
	MaxTagLen       = 50
	// MaxValueBytes bounds a condition's value, MaxParamsBytes an action's params (webhook
	// headers and body included), as JSON.
	MaxValueBytes            = 8 << 10
	MaxParamsBytes           = 32 << 10
	MaxURLLength             = 2048
	MinWebhookTimeoutSeconds = 1
	MaxWebhookTimeoutSeconds = 30
	// MinScheduleInterval bounds how often an "@every" schedule may run.
	MinScheduleInterval = time.Minute
	// DefaultTimezone is the timezone of schedules that name none.
	DefaultTimezone = "UTC"
)

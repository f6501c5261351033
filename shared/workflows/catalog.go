package workflows

import (
	"slices"
	"sync"

	"github.com/agentplane/agentplane/shared/outbox"
)

// CatalogAction is an action type as the catalog shows it.
type CatalogAction struct {
	Type     string   `json:"type"`
	Params   []string `json:"params"`
	Required []string `json:"required"`
}

// CatalogView is everything a workflow may be made of.
type CatalogView struct {
	TriggerTypes  []string `json:"trigger_types"`
	TriggerEvents []string `json:"trigger_events"`
	// EnvelopeFields are the fields of every event besides data; EventFields the fields of
	// each event type's data, the ones its conditions may name.
	EnvelopeFields     []string            `json:"envelope_fields"`
	EventFields        map[string][]string `json:"event_fields"`
	ScheduleConfigKeys []string            `json:"schedule_config_keys"`
	Operators          []string            `json:"operators"`
	FieldPathPattern   string              `json:"field_path_pattern"`
	Actions            []CatalogAction     `json:"actions"`
	MessageModes       []string            `json:"message_modes"`
	MemoryTypes        []string            `json:"memory_types"`
	DealStatuses       []string            `json:"deal_statuses"`
	Limits             map[string]int      `json:"limits"`
}

// Catalog lists the trigger types and events, condition operators and action types with their
// params: the same lists Validate checks definitions against.
func Catalog() CatalogView {
	v := CatalogView{TriggerTypes: TriggerTypes, TriggerEvents: outbox.Types, EnvelopeFields: outbox.EnvelopeFields, EventFields: eventFields(),
		ScheduleConfigKeys: ScheduleConfigKeys,
		Operators:          Operators, FieldPathPattern: FieldPathPattern, MessageModes: MessageModes, MemoryTypes: MemoryTypes,
		DealStatuses: DealStatuses, Limits: map[string]int{"conditions": MaxConditions, "actions": MaxActions,
			"message_length": MaxMessageLen, "tags": MaxTags, "webhook_timeout_seconds": MaxWebhookTimeoutSeconds}}
	for _, t := range ActionTypes {
		v.Actions = append(v.Actions, CatalogAction{Type: t, Params: slices.Clone(ActionParams[t]), Required: slices.Clone(RequiredParams[t])})
	}
	return v
}

// eventFields are the fields of each event type's data, as its package declared it
// (outbox.Declare): the ones Validate checks event conditions against.
var eventFields = sync.OnceValue(func() map[string][]string {
	out := map[string][]string{}
	for _, typ := range outbox.Types {
		if fields, ok := outbox.Fields(typ); ok {
			out[typ] = fields
		}
	}
	return out
})

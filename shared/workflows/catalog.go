package workflows

import (
	"slices"

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
	TriggerTypes       []string        `json:"trigger_types"`
	TriggerEvents      []string        `json:"trigger_events"`
	ScheduleConfigKeys []string        `json:"schedule_config_keys"`
	Operators          []string        `json:"operators"`
	FieldPathPattern   string          `json:"field_path_pattern"`
	Actions            []CatalogAction `json:"actions"`
	MessageModes       []string        `json:"message_modes"`
	MemoryTypes        []string        `json:"memory_types"`
	DealStatuses       []string        `json:"deal_statuses"`
	Limits             map[string]int  `json:"limits"`
}

// Catalog lists the trigger types and events, condition operators and action types with their
// params: the same lists Validate checks definitions against.
func Catalog() CatalogView {
	v := CatalogView{TriggerTypes: TriggerTypes, TriggerEvents: outbox.Types, ScheduleConfigKeys: ScheduleConfigKeys,
		Operators: Operators, FieldPathPattern: FieldPathPattern, MessageModes: MessageModes, MemoryTypes: MemoryTypes,
		DealStatuses: DealStatuses, Limits: map[string]int{"conditions": MaxConditions, "actions": MaxActions,
			"message_length": MaxMessageLen, "tags": MaxTags, "webhook_timeout_seconds": MaxWebhookTimeoutSeconds}}
	for _, t := range ActionTypes {
		v.Actions = append(v.Actions, CatalogAction{Type: t, Params: slices.Clone(ActionParams[t]), Required: slices.Clone(RequiredParams[t])})
	}
	return v
}

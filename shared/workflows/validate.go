package workflows

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/limits"
	"github.com/agentplane/agentplane/shared/outbox"
)

var fieldPathRE = regexp.MustCompile(FieldPathPattern)

// Validate checks d and returns an Invalid *apperr.Error naming every problem by its JSON
// field path, or nil. eventTypes lists the events an event trigger may name.
//
// Validate normalises d in place: it trims spaces, defaults the trigger type to manual and
// a schedule's timezone to UTC, turns nil conditions, actions and trigger_config into empty
// ones, and sets the default value of exists (true) and of send_message's mode (post).
func (d *Definition) Validate(eventTypes []string) error {
	return d.validate(eventTypes, nil)
}

// ValidateUpdate is Validate for d replacing prev, a stored definition: it checks the
// conditions' fields against the trigger event only when d changes the trigger event or the
// conditions, so that a workflow stored before that check can still be renamed or paused.
func (d *Definition) ValidateUpdate(prev Definition, eventTypes []string) error {
	prev.Conditions = slices.Clone(prev.Conditions)
	prev.normalise()
	for i := range prev.Conditions {
		operandProblem(&prev.Conditions[i])
	}
	return d.validate(eventTypes, &prev)
}

// validate checks d; with prev, only a change of the trigger event or the conditions has their
// fields checked against the event.
func (d *Definition) validate(eventTypes []string, prev *Definition) error {
	d.normalise()
	var p apperr.Problems
	d.validateTrigger(&p, eventTypes)
	event := ""
	if d.TriggerType == TriggerTypeEvent && slices.Contains(eventTypes, d.TriggerEvent) {
		event = d.TriggerEvent
	}
	validateConditions(&p, d.Conditions)
	if prev == nil || d.TriggerEvent != prev.TriggerEvent || !sameJSON(d.Conditions, prev.Conditions) {
		validateEventFields(&p, d.Conditions, event)
	}
	validateActions(&p, d.Actions)
	return p.Err()
}

// sameJSON reports whether a and b have the same JSON text.
func sameJSON(a, b []Condition) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

func (d *Definition) normalise() {
	d.TriggerType = strings.TrimSpace(d.TriggerType)
	if d.TriggerType == "" {
		d.TriggerType = TriggerTypeManual
	}
	d.TriggerEvent = strings.TrimSpace(d.TriggerEvent)
	if d.TriggerConfig == nil {
		d.TriggerConfig = map[string]any{}
	}
	if d.Conditions == nil {
		d.Conditions = []Condition{}
	}
	if d.Actions == nil {
		d.Actions = []Action{}
	}
	for i := range d.Conditions {
		d.Conditions[i].Field = strings.TrimSpace(d.Conditions[i].Field)
		d.Conditions[i].Operator = strings.TrimSpace(d.Conditions[i].Operator)
	}
	for i := range d.Actions {
		d.Actions[i].Type = strings.TrimSpace(d.Actions[i].Type)
	}
}

func (d *Definition) validateTrigger(p *apperr.Problems, eventTypes []string) {
	if !slices.Contains(TriggerTypes, d.TriggerType) {
		p.Add("trigger_type", "must be one of: %s", strings.Join(TriggerTypes, ", "))
		return
	}
	switch {
	case d.TriggerType == TriggerTypeEvent:
		validateTriggerEvent(p, d.TriggerEvent, eventTypes)
	case d.TriggerEvent != "":
		p.Add("trigger_event", "is only for event triggers")
	}
	if d.TriggerType == TriggerTypeSchedule {
		validateSchedule(p, d.TriggerConfig)
		return
	}
	for _, key := range sortedKeys(d.TriggerConfig) {
		p.Add("trigger_config."+key, "is not a setting of %s triggers, which take none", d.TriggerType)
	}
}

func validateTriggerEvent(p *apperr.Problems, event string, eventTypes []string) {
	allowed := strings.Join(eventTypes, ", ")
	switch {
	case event == "":
		p.Add("trigger_event", "is required for event triggers; one of: %s", allowed)
	case !slices.Contains(eventTypes, event):
		p.Add("trigger_event", "must be one of: %s", allowed)
	}
}

func validateSchedule(p *apperr.Problems, config map[string]any) {
	for _, key := range sortedKeys(config) {
		if !slices.Contains(ScheduleConfigKeys, key) {
			p.Add("trigger_config."+key, "is not a schedule setting; allowed: %s", strings.Join(ScheduleConfigKeys, ", "))
		}
	}
	validateCron(p, config)
	validateTimezone(p, config)
}

func validateCron(p *apperr.Problems, config map[string]any) {
	const field = "trigger_config.cron"
	if config["cron"] == nil {
		p.Add(field, "is required for schedule triggers")
		return
	}
	raw, ok := config["cron"].(string)
	if !ok {
		p.Add(field, "must be a string")
		return
	}
	spec := strings.TrimSpace(raw)
	config["cron"] = spec
	switch {
	case spec == "":
		p.Add(field, "is required for schedule triggers")
	case strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ="):
		p.Add(field, "must not start with CRON_TZ= or TZ=; set trigger_config.timezone instead")
	default:
		validateCronSpec(p, field, spec)
	}
}

func validateCronSpec(p *apperr.Problems, field, spec string) {
	schedule, err := cron.ParseStandard(spec)
	if err != nil {
		p.Add(field, "is not a valid cron expression: %v", err)
		return
	}
	if every, ok := schedule.(cron.ConstantDelaySchedule); ok && every.Delay < MinScheduleInterval {
		p.Add(field, "must not run more often than once a minute")
	}
}

func validateTimezone(p *apperr.Problems, config map[string]any) {
	const field = "trigger_config.timezone"
	if config["timezone"] == nil {
		config["timezone"] = DefaultTimezone
		return
	}
	raw, ok := config["timezone"].(string)
	if !ok {
		p.Add(field, "must be a string")
		return
	}
	tz := strings.TrimSpace(raw)
	if tz == "" {
		tz = DefaultTimezone
	}
	config["timezone"] = tz
	if tz == "Local" {
		p.Add(field, "must name a time zone such as Europe/Berlin, not Local")
		return
	}
	if _, err := time.LoadLocation(tz); err != nil {
		p.Add(field, "is not a known IANA time zone such as Europe/Berlin")
	}
}

// validateConditions checks the conditions of a workflow, but not their fields against its
// trigger event (validateEventFields).
func validateConditions(p *apperr.Problems, conditions []Condition) {
	if len(conditions) > MaxConditions {
		p.Add("conditions", "must have at most %d entries", MaxConditions)
		return
	}
	for i := range conditions {
		validateCondition(p, fmt.Sprintf("conditions[%d]", i), &conditions[i])
	}
}

// validateEventFields checks that the well-formed fields of conditions are fields of events of
// type event ("" for other triggers, whose fields are not checked).
func validateEventFields(p *apperr.Problems, conditions []Condition, event string) {
	if event == "" || len(conditions) > MaxConditions {
		return
	}
	for i, c := range conditions {
		if wellFormedField(c.Field) {
			validateEventField(p, fmt.Sprintf("conditions[%d].field", i), c.Field, event)
		}
	}
}

func wellFormedField(field string) bool {
	return field != "" && len(field) <= MaxFieldPathLen && fieldPathRE.MatchString(field)
}

func validateCondition(p *apperr.Problems, path string, c *Condition) {
	switch {
	case c.Field == "":
		p.Add(path+".field", "is required")
	case !wellFormedField(c.Field):
		p.Add(path+".field", "must be a dot path such as data.status of letters, digits and underscores, at most %d characters", MaxFieldPathLen)
	}
	if !slices.Contains(Operators, c.Operator) {
		p.Add(path+".operator", "must be one of: %s", strings.Join(Operators, ", "))
		return
	}
	if problem := operandProblem(c); problem != "" {
		p.Add(path+".value", "%s", problem)
	}
	limits.JSON(p, path+".value", c.Value, MaxValueBytes)
}

// validateEventField checks that field is a field events of type event have (the catalog's
// event_fields), naming the fields there are where it strays.
func validateEventField(p *apperr.Problems, path, field, event string) {
	ok, at, fields := outbox.Resolve(event, field)
	if ok {
		return
	}
	const see = "GET /v1/bot/workflow/catalog lists the fields of every event"
	switch {
	case at == "":
		p.Add(path, "is not a field of %s events, whose fields are %s and data.*; %s", event, strings.Join(outbox.EnvelopeFields, ", "), see)
	case len(fields) == 0:
		p.Add(path, "is not a field of %s events: %s is a value, with no fields; %s", event, at, see)
	case slices.Equal(fields, []string{"0"}):
		p.Add(path, "is not a field of %s events: %s is an array; name an element by its index, as in %s.0; %s", event, at, at, see)
	default:
		name, _, _ := strings.Cut(strings.TrimPrefix(field, at+"."), ".")
		p.Add(path, "is not a field of %s events: %s has no field %s; its fields are %s; %s", event, at, name, strings.Join(fields, ", "), see)
	}
}

// operandProblem returns what is wrong with c's value for its operator, or "". It sets the
// default value of exists.
func operandProblem(c *Condition) string {
	switch c.Operator {
	case OpExists:
		if c.Value.V == nil {
			c.Value.V = true
		}
		if _, ok := c.Value.V.(bool); !ok {
			return "must be true or false for exists"
		}
	case OpGt, OpGte, OpLt, OpLte:
		if _, ok := number(c.Value.V); !ok {
			return "must be a number for " + c.Operator
		}
	case OpIn:
		if list, ok := c.Value.V.([]any); !ok || len(list) == 0 {
			return "must be a non-empty array for in"
		}
	case OpContains:
		if _, ok := number(c.Value.V); !ok && !isString(c.Value.V) {
			return "must be a string or a number for contains"
		}
	default:
		if c.Value.V == nil {
			return "is required"
		}
	}
	return ""
}

func validateActions(p *apperr.Problems, actions []Action) {
	if len(actions) > MaxActions {
		p.Add("actions", "must have at most %d entries", MaxActions)
		return
	}
	for i := range actions {
		validateAction(p, fmt.Sprintf("actions[%d]", i), &actions[i])
	}
}

func validateAction(p *apperr.Problems, path string, a *Action) {
	check, known := actionChecks[a.Type]
	if !known {
		p.Add(path+".type", "must be one of: %s", strings.Join(ActionTypes, ", "))
	}
	if a.Params == nil {
		p.Add(path+".params", "is required")
		return
	}
	limits.JSON(p, path+".params", a.Params, MaxParamsBytes)
	if !known {
		return
	}
	ps := params{problems: p, path: path + ".params", m: a.Params}
	allowed := ActionParams[a.Type]
	for _, key := range sortedKeys(a.Params) {
		if !slices.Contains(allowed, key) {
			ps.add(key, "is not a parameter of %s; allowed: %s", a.Type, strings.Join(allowed, ", "))
		}
	}
	check(ps)
}

// number returns v as a float64 when it is a JSON number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

package crm

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Template is a ready-made CRM for a kind of business: a pipeline with its stages (the open
// ones in order, then the stage of won deals and the stage of lost ones), custom fields and
// contact statuses.
type Template struct {
	Key         string           `json:"key"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Pipeline    string           `json:"pipeline"`
	Stages      []TemplateStage  `json:"stages"`
	Fields      []TemplateField  `json:"fields"`
	Statuses    []TemplateStatus `json:"statuses"`
}

// TemplateStatus is a contact status a template makes.
type TemplateStatus struct {
	Key    string `json:"key"`
	Label  string `json:"label"`
	Colour string `json:"colour"`
}

// TemplateStage is a stage a template makes.
type TemplateStage struct {
	Name        string `json:"name"`
	Probability int    `json:"probability"`
	// Status is what a deal in the stage is: open, won or lost.
	Status string `json:"status"`
}

// TemplateField is a custom field a template makes.
type TemplateField struct {
	Key       string   `json:"key"`
	Label     string   `json:"label"`
	FieldType string   `json:"field_type"`
	Options   []string `json:"options"`
	Entity    string   `json:"entity"`
}

func field(entity, label, typ string, options ...string) TemplateField {
	if options == nil {
		options = []string{}
	}
	return TemplateField{Key: FieldKey(label), Label: label, FieldType: typ, Options: options, Entity: entity}
}

func stages(won, lost string, open ...string) []TemplateStage {
	out := make([]TemplateStage, 0, len(open)+2)
	for i, name := range open {
		out = append(out, TemplateStage{Name: name, Probability: (i + 1) * 100 / (len(open) + 1), Status: StatusOpen})
	}
	return append(out, TemplateStage{Name: won, Probability: 100, Status: StatusWon}, TemplateStage{Name: lost, Status: StatusLost})
}

// Templates are the templates, by key.
var Templates = []Template{
	{Key: "sales", Name: "Sales", Description: "B2B sales: leads qualified, proposals sent, deals negotiated and closed.",
		Pipeline: "Sales pipeline", Stages: stages("Won", "Lost", "Lead", "Qualified", "Proposal", "Negotiation"),
		Fields: []TemplateField{
			field(EntityContact, "Lead source", FieldSelect, "Website", "Referral", "Event", "Outbound", "Other"),
			field(EntityContact, "Company size", FieldSelect, "1-10", "11-50", "51-200", "201-1000", "1000+"),
			field(EntityContact, "Job title", FieldText),
			field(EntityDeal, "Expected close date", FieldDate),
			field(EntityDeal, "Decision maker", FieldText),
		},
		Statuses: []TemplateStatus{
			{Key: "lead", Label: "Lead", Colour: "#3B82F6"},
			{Key: "qualified", Label: "Qualified", Colour: "#8B5CF6"},
			{Key: "opportunity", Label: "Opportunity", Colour: "#EC4899"},
			{Key: "customer", Label: "Customer", Colour: "#10B981"},
			{Key: "churned", Label: "Churned", Colour: "#6B7280"},
		}},
	{Key: "support", Name: "Customer support", Description: "Support requests from new to resolved, with their priority and product.",
		Pipeline: "Support requests", Stages: stages("Resolved", "Closed unresolved", "New", "Triaged", "In progress", "Waiting on customer"),
		Fields: []TemplateField{
			field(EntityDeal, "Priority", FieldSelect, "Low", "Normal", "High", "Urgent"),
			field(EntityDeal, "Product", FieldText),
			field(EntityDeal, "Channel", FieldSelect, "Chat", "Email", "Phone", "Other"),
			field(EntityContact, "Plan", FieldSelect, "Free", "Pro", "Enterprise"),
		},
		Statuses: []TemplateStatus{
			{Key: "new", Label: "New", Colour: "#3B82F6"},
			{Key: "open", Label: "Open", Colour: "#F59E0B"},
			{Key: "waiting", Label: "Waiting on customer", Colour: "#A855F7"},
			{Key: "resolved", Label: "Resolved", Colour: "#10B981"},
		}},
	{Key: "recruiting", Name: "Recruiting", Description: "Candidates from application to hire, with the role and where they came from.",
		Pipeline: "Hiring", Stages: stages("Hired", "Rejected", "Applied", "Screening", "Interview", "Offer"),
		Fields: []TemplateField{
			field(EntityDeal, "Role", FieldText),
			field(EntityContact, "Resume URL", FieldURL),
			field(EntityContact, "Years of experience", FieldNumber),
			field(EntityContact, "Candidate source", FieldSelect, "Referral", "Job board", "LinkedIn", "Agency", "Other"),
		},
		Statuses: []TemplateStatus{
			{Key: "applied", Label: "Applied", Colour: "#3B82F6"},
			{Key: "screening", Label: "Screening", Colour: "#06B6D4"},
			{Key: "interview", Label: "Interview", Colour: "#F59E0B"},
			{Key: "offer", Label: "Offer", Colour: "#8B5CF6"},
			{Key: "hired", Label: "Hired", Colour: "#10B981"},
			{Key: "rejected", Label: "Rejected", Colour: "#EF4444"},
		}},
	{Key: "real_estate", Name: "Real estate", Description: "Buyers from first inquiry to a closed sale, with what they look for.",
		Pipeline: "Property deals", Stages: stages("Closed", "Fell through", "New inquiry", "Viewing scheduled", "Offer made", "Under contract"),
		Fields: []TemplateField{
			field(EntityDeal, "Property type", FieldSelect, "House", "Apartment", "Land", "Commercial"),
			field(EntityDeal, "Bedrooms", FieldNumber),
			field(EntityContact, "Budget", FieldNumber),
			field(EntityContact, "Preferred area", FieldText),
			field(EntityContact, "Mortgage pre-approved", FieldBoolean),
		},
		Statuses: []TemplateStatus{
			{Key: "lead", Label: "Lead", Colour: "#3B82F6"},
			{Key: "viewing", Label: "Viewing", Colour: "#06B6D4"},
			{Key: "offer", Label: "Offer made", Colour: "#F97316"},
			{Key: "under_contract", Label: "Under contract", Colour: "#F59E0B"},
			{Key: "closed", Label: "Closed", Colour: "#10B981"},
		}},
}

// templateNamespace derives the ids of what templates make.
var templateNamespace = uuid.MustParse("b7e3f2a1-4c5d-4e6f-8a9b-0c1d2e3f4a5b")

// ApplyInput is a template's application: template_key names it; name is its pipeline's
// (the template's when empty); create_new makes a pipeline of its own for that name even when
// the template's is there; replace brings what the template made earlier back to it: the
// pipeline's name, fields of its keys whose type or options differ, and contact statuses of its
// keys whose label or colour differ.
type ApplyInput struct {
	TemplateKey string       `json:"template_key"`
	Name        *string      `json:"name"`
	Replace     flex.OptFlag `json:"replace"`
	CreateNew   flex.OptFlag `json:"create_new"`
}

// Applied is what a template's application did. Created and Updated count what changed; an
// application that changed nothing has both at zero. KeptFields and KeptStatuses are fields and
// contact statuses of the template's keys left as they were (they differ from the template's and
// replace was not asked). Statuses are all the project's contact statuses after it.
type Applied struct {
	Template     Template        `json:"template"`
	Pipeline     Pipeline        `json:"pipeline"`
	Fields       []Field         `json:"fields"`
	Created      Counts          `json:"created"`
	Updated      Counts          `json:"updated"`
	KeptFields   []string        `json:"kept_fields"`
	KeptStatuses []string        `json:"kept_statuses"`
	Statuses     []ContactStatus `json:"statuses"`
}

// Counts counts pipelines, stages, fields and contact statuses.
type Counts struct {
	Pipelines int `json:"pipelines"`
	Stages    int `json:"stages"`
	Fields    int `json:"fields"`
	Statuses  int `json:"statuses"`
}

func templateOf(key string) (Template, error) {
	key = strings.ToLower(strings.TrimSpace(key))
	keys := make([]string, len(Templates))
	for i, t := range Templates {
		if t.Key == key {
			return t, nil
		}
		keys[i] = t.Key
	}
	if key == "" {
		return Template{}, apperr.Invalidf("template_key", "is required: one of %s", strings.Join(keys, ", "))
	}
	return Template{}, apperr.Invalidf("template_key", "must be one of %s", strings.Join(keys, ", "))
}

// ApplyTemplate makes the template's pipeline, fields and contact statuses in the project,
// idempotently: what exists already (the pipeline by the id the template and name give it,
// fields and statuses by key) is not made again, so an application repeated changes nothing.
func (s *Service) ApplyTemplate(ctx context.Context, projectID, botID string, in ApplyInput) (Applied, error) {
	tpl, err := templateOf(in.TemplateKey)
	if err != nil {
		return Applied{}, err
	}
	if trimmed(in.Name) == "" {
		in.Name = nil
	}
	var p apperr.Problems
	name := checkName(&p, "name", in.Name, false)
	if err := p.Err(); err != nil {
		return Applied{}, err
	}
	if name == "" {
		name = tpl.Pipeline
	}
	seed := projectID + "/template/" + tpl.Key
	replace := in.Replace.Value == 1
	if in.CreateNew.Value == 1 {
		seed += "/new/" + strings.ToLower(name)
	}
	out := Applied{Template: tpl, KeptFields: []string{}, KeptStatuses: []string{}}
	pl, err := s.templatePipeline(ctx, projectID, botID, uuid.NewSHA1(templateNamespace, []byte(seed)).String(), name, tpl, replace, &out)
	if err != nil {
		return Applied{}, err
	}
	out.Pipeline = pl
	if out.Fields, err = s.templateFields(ctx, projectID, tpl, replace, &out); err != nil {
		return Applied{}, err
	}
	out.Statuses, err = s.templateStatuses(ctx, projectID, tpl, replace, &out)
	return out, err
}

// statusWrites bounds the attempts of a template's statuses against writes of other
// applications meanwhile.
const statusWrites = 5

// templateStatuses returns the project's contact statuses with tpl's added after them (those
// of keys it has already kept, or with replace brought back to the template's label and
// colour), written as the next revision of the project's statuses when they changed.
func (s *Service) templateStatuses(ctx context.Context, projectID string, tpl Template, replace bool, out *Applied) ([]ContactStatus, error) {
	for range statusWrites {
		set, err := s.repo.ContactStatuses(ctx, projectID)
		if err != nil {
			return nil, err
		}
		next := slices.Clone(set.Statuses)
		var created, updated int
		kept := []string{}
		for _, ts := range tpl.Statuses {
			i := slices.IndexFunc(next, func(st ContactStatus) bool { return st.Key == ts.Key })
			switch {
			case i < 0:
				next = append(next, ContactStatus{UUID: statusID(projectID, ts.Key), Key: ts.Key, Label: ts.Label, Colour: ts.Colour, Order: len(next) + 1})
				created++
			case next[i].Label == ts.Label && next[i].Colour == ts.Colour:
			case replace:
				next[i].Label, next[i].Colour = ts.Label, ts.Colour
				updated++
			default:
				kept = append(kept, ts.Key)
			}
		}
		out.KeptStatuses = kept
		if created+updated == 0 {
			return next, nil
		}
		err = s.repo.WriteContactStatuses(ctx, StatusSet{ProjectID: projectID, Statuses: next, Rev: set.Rev + 1})
		switch {
		case err == nil:
			out.Created.Statuses, out.Updated.Statuses = created, updated
			return next, nil
		case apperr.As(err).Kind != apperr.Conflict:
			return nil, err
		}
	}
	return nil, apperr.New(apperr.Conflict, "statuses_changed", "The project's contact statuses kept changing while the template was applied: apply it again.")
}

// templatePipeline returns the pipeline id, made from tpl when it does not exist (its stages
// first, with ids of their own derived from it, so that an application cut short is completed
// by the next), renamed to name when replace is asked.
func (s *Service) templatePipeline(ctx context.Context, projectID, botID, id, name string, tpl Template, replace bool, out *Applied) (Pipeline, error) {
	pl, err := s.pipeline(ctx, projectID, id)
	switch {
	case err == nil && replace && pl.Name != name:
		renamed, err := s.RenamePipeline(ctx, projectID, botID, id, PipelineInput{Name: &name})
		out.Updated.Pipelines = 1
		return renamed, err
	case err == nil:
		return pl, nil
	case !apperr.IsNotFound(err):
		return Pipeline{}, err
	}
	pl = Pipeline{UUID: id, ProjectID: projectID, Name: name, TemplateKey: tpl.Key, CreatedAt: s.now()}
	for i, ts := range tpl.Stages {
		st := Stage{UUID: uuid.NewSHA1(templateNamespace, []byte(id+"/stage/"+strconv.Itoa(i))).String(), ProjectID: projectID, PipelineID: id,
			Name: ts.Name, Probability: ts.Probability, SortOrder: i + 1, Outcome: ts.Status}
		switch err := s.repo.InsertStage(ctx, st, nil); {
		case err == nil:
			out.Created.Stages++
		case apperr.As(err).Kind != apperr.Conflict:
			return Pipeline{}, err
		}
		pl.Stages = append(pl.Stages, st)
	}
	ev := pipelineEvents.New(ctx, outbox.PipelineCreated, projectID, botID, pl)
	switch err := s.repo.InsertPipeline(ctx, pl, ev); {
	case apperr.As(err).Kind == apperr.Conflict:
		// Another application made it meanwhile.
		return s.pipeline(ctx, projectID, id)
	case err != nil:
		return Pipeline{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: PipelineResource, ID: pl.UUID}, ev)
	out.Created.Pipelines = 1
	return pl, nil
}

// templateFields returns the project's fields of tpl's keys, making those missing and, with
// replace, bringing those that differ back to the template's type and options.
func (s *Service) templateFields(ctx context.Context, projectID string, tpl Template, replace bool, out *Applied) ([]Field, error) {
	existing, err := s.repo.Fields(ctx, projectID)
	if err != nil {
		return nil, err
	}
	fields := make([]Field, 0, len(tpl.Fields))
	for _, tf := range tpl.Fields {
		i := slices.IndexFunc(existing, func(f Field) bool { return f.Key == tf.Key && f.Entity == tf.Entity })
		if i < 0 {
			f, err := s.templateField(ctx, projectID, tf, len(existing)+out.Created.Fields, out)
			if err != nil {
				return nil, err
			}
			fields = append(fields, f)
			continue
		}
		f := existing[i]
		if f.FieldType == tf.FieldType && slices.Equal(f.Options, tf.Options) {
			fields = append(fields, f)
			continue
		}
		if !replace {
			out.KeptFields = append(out.KeptFields, f.Key)
			fields = append(fields, f)
			continue
		}
		change, err := s.UpdateField(ctx, projectID, f.UUID, FieldInput{FieldType: &tf.FieldType, Options: tf.Options})
		if err != nil {
			return nil, err
		}
		out.Updated.Fields++
		fields = append(fields, change.Field)
	}
	return fields, nil
}

// templateField makes the field tf, the project having had existing fields; one made meanwhile
// by another application is read back.
func (s *Service) templateField(ctx context.Context, projectID string, tf TemplateField, existing int, out *Applied) (Field, error) {
	if existing >= MaxFields {
		return Field{}, apperr.New(apperr.Conflict, "too_many_fields", "The project has "+strconv.Itoa(MaxFields)+" custom fields, the most it may have: delete some to apply this template.")
	}
	now := s.now()
	f := Field{UUID: uuid.NewSHA1(templateNamespace, []byte(projectID+"/field/"+tf.Entity+"/"+tf.Key)).String(), ProjectID: projectID,
		Key: tf.Key, Label: tf.Label, FieldType: tf.FieldType, Options: tf.Options, Entity: tf.Entity, CreatedAt: now, UpdatedAt: now}
	if err := s.repo.InsertField(ctx, f); apperr.As(err).Kind == apperr.Conflict {
		all, rerr := s.repo.Fields(ctx, projectID)
		if i := slices.IndexFunc(all, func(e Field) bool { return e.Key == f.Key && e.Entity == f.Entity }); rerr == nil && i >= 0 {
			return all[i], nil
		}
		return Field{}, err
	} else if err != nil {
		return Field{}, err
	}
	out.Created.Fields++
	return f, nil
}

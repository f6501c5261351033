package crm

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// pipelineEvents and stageEvents are the events of pipelines and stages, about the pipeline or
// stage.
var (
	pipelineEvents = outbox.Declare[Pipeline](outbox.PipelineCreated, outbox.PipelineUpdated, outbox.PipelineDeleted)
	stageEvents    = outbox.Declare[Stage](outbox.StageCreated, outbox.StageUpdated, outbox.StageDeleted)
)

// DealQuery narrows a list of deals: by status, by stage (name or uuid) and by pipeline.
type DealQuery struct {
	Status, Stage, PipelineID string
}

// Bounds of pipelines and stages.
const (
	MaxPipelineNameLength = 200
	MaxStages             = 30
)

// DefaultPipelineID is the id of the project's default pipeline.
func DefaultPipelineID(projectID string) string {
	return uuid.NewSHA1(stageNamespace, []byte(projectID+"/pipeline/default")).String()
}

// pipelineFor is the stages of the pipeline pid, or, when ref names a stage of another pipeline
// (and none of pid), that stage's pipeline.
func pipelineFor(all []Stage, pid string, ref *string) pipeline {
	in := func(id string) pipeline {
		var p pipeline
		for _, s := range all {
			if s.PipelineID == id {
				p = append(p, s)
			}
		}
		slices.SortStableFunc(p, func(a, b Stage) int { return a.SortOrder - b.SortOrder })
		return p
	}
	p := in(pid)
	if ref != nil {
		if _, ok := p.find(*ref); !ok {
			if st, ok := pipeline(all).find(*ref); ok {
				return in(st.PipelineID)
			}
		}
	}
	return p
}

// StageInput is a stage's fields in a request.
type StageInput struct {
	PipelineID  string      `json:"pipeline_id"`
	Name        *string     `json:"name"`
	Probability flex.OptInt `json:"probability"`
	SortOrder   flex.OptInt `json:"sort_order"`
	Outcome     *string     `json:"outcome"`
}

// PipelineInput is a pipeline's fields in a request: a name, and on creation its open stages
// (Won and Lost are added).
type PipelineInput struct {
	Name   *string      `json:"name"`
	Stages []StageInput `json:"stages"`
}

// orInt is o's value, or def when it is absent.
func orInt(o flex.OptInt, def int) int {
	if o.Set {
		return int(o.Value)
	}
	return def
}

func checkProbability(p *apperr.Problems, field string, o flex.OptInt) {
	if o.Set && (o.Value < 0 || o.Value > 100) {
		p.Add(field, "must be between 0 and 100")
	}
}

func checkName(p *apperr.Problems, field string, name *string, required bool) string {
	v := trimmed(name)
	switch {
	case v == "" && (required || name != nil):
		p.Add(field, "is required")
	case utf8.RuneCountInString(v) > MaxPipelineNameLength:
		p.Add(field, "must be at most %d characters", MaxPipelineNameLength)
	}
	return v
}

// Pipelines lists the project's pipelines with their stages, the default one first.
func (s *Service) Pipelines(ctx context.Context, projectID string) ([]Pipeline, error) {
	stages, err := s.Stages(ctx, projectID)
	if err != nil {
		return nil, err
	}
	stored, err := s.repo.Pipelines(ctx, projectID)
	if err != nil {
		return nil, err
	}
	out := []Pipeline{{UUID: DefaultPipelineID(projectID), ProjectID: projectID, Name: "Sales", IsDefault: true}}
	out = append(out, stored...)
	for i := range out {
		out[i].Stages = []Stage(pipelineFor(stages, out[i].UUID, nil))
		if out[i].Stages == nil {
			out[i].Stages = []Stage{}
		}
	}
	return out, nil
}

// pipeline returns one pipeline of the project.
func (s *Service) pipeline(ctx context.Context, projectID, id string) (Pipeline, error) {
	all, err := s.Pipelines(ctx, projectID)
	if err != nil {
		return Pipeline{}, err
	}
	for _, p := range all {
		if p.UUID == strings.TrimSpace(id) {
			return p, nil
		}
	}
	return Pipeline{}, apperr.NotFoundf("pipeline")
}

// CreatePipeline adds a pipeline with the given open stages (one "New" stage when none), then
// Won and Lost.
func (s *Service) CreatePipeline(ctx context.Context, projectID, botID string, in PipelineInput) (Pipeline, error) {
	var p apperr.Problems
	name := checkName(&p, "name", in.Name, true)
	if len(in.Stages) > MaxStages {
		p.Add("stages", "must have at most %d entries", MaxStages)
	}
	if err := p.Err(); err != nil {
		return Pipeline{}, err
	}
	pl := Pipeline{UUID: ids.New(), ProjectID: projectID, Name: name, CreatedAt: s.now()}
	open := in.Stages
	if len(open) == 0 {
		first := "New"
		open = []StageInput{{Name: &first}}
	}
	closing := []Stage{{Name: "Won", Probability: 100, Outcome: StatusWon}, {Name: "Lost", Outcome: StatusLost}}
	var stages []Stage
	for i, st := range open {
		field := "stages[" + strconv.Itoa(i) + "]"
		n := checkName(&p, field+".name", st.Name, true)
		checkProbability(&p, field+".probability", st.Probability)
		if _, dup := pipeline(append(slices.Clone(stages), closing...)).named(n, ""); dup && n != "" {
			return Pipeline{}, stageExists(field+".name", n)
		}
		stages = append(stages, Stage{UUID: ids.New(), ProjectID: projectID, PipelineID: pl.UUID, Name: n,
			Probability: orInt(st.Probability, 10), SortOrder: i + 1, Outcome: StatusOpen})
	}
	if err := p.Err(); err != nil {
		return Pipeline{}, err
	}
	for i, closed := range closing {
		closed.UUID, closed.ProjectID, closed.PipelineID, closed.SortOrder = ids.New(), projectID, pl.UUID, len(open)+i+1
		stages = append(stages, closed)
	}
	for _, st := range stages {
		if err := s.repo.InsertStage(ctx, st, nil); err != nil {
			return Pipeline{}, err
		}
	}
	pl.Stages = stages
	ev := pipelineEvents.New(ctx, outbox.PipelineCreated, projectID, botID, pl)
	if err := s.repo.InsertPipeline(ctx, pl, ev); err != nil {
		return Pipeline{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: PipelineResource, ID: pl.UUID}, ev)
	return pl, nil
}

// RenamePipeline renames a pipeline the project made (not the default one); without a name it
// changes nothing and returns the pipeline.
func (s *Service) RenamePipeline(ctx context.Context, projectID, botID, id string, in PipelineInput) (Pipeline, error) {
	if in.Name == nil {
		return s.pipeline(ctx, projectID, id)
	}
	var p apperr.Problems
	name := checkName(&p, "name", in.Name, true)
	if err := p.Err(); err != nil {
		return Pipeline{}, err
	}
	pl, err := s.pipeline(ctx, projectID, id)
	if err != nil {
		return Pipeline{}, err
	}
	if pl.IsDefault {
		return Pipeline{}, apperr.New(apperr.Conflict, "default_pipeline", "The default pipeline cannot be renamed or deleted.")
	}
	pl.Name = name
	ev := pipelineEvents.New(ctx, outbox.PipelineUpdated, projectID, botID, pl)
	if err := s.repo.RenamePipeline(ctx, projectID, pl.UUID, name, ev); err != nil {
		return Pipeline{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: PipelineResource, ID: pl.UUID}, ev)
	return pl, nil
}

// DeletePipeline removes a pipeline the project made, with its stages, when no deal is in it.
func (s *Service) DeletePipeline(ctx context.Context, projectID, botID, id string) error {
	pl, err := s.pipeline(ctx, projectID, id)
	if err != nil {
		return err
	}
	if pl.IsDefault {
		return apperr.New(apperr.Conflict, "default_pipeline", "The default pipeline cannot be renamed or deleted.")
	}
	ids := make([]string, len(pl.Stages))
	for i, st := range pl.Stages {
		ids[i] = st.UUID
	}
	if _, n, err := s.repo.Deals(ctx, DealFilter{ProjectID: projectID, StageIDs: ids}, paging.Page{Page: 1, PerPage: 1}); err != nil {
		return err
	} else if n > 0 {
		return apperr.New(apperr.Conflict, "pipeline_in_use", "Deals are in this pipeline; move them to another first.")
	}
	ev := pipelineEvents.New(ctx, outbox.PipelineDeleted, projectID, botID, pl)
	return s.deleted(ctx, ev, func() (outbox.Ref, error) { return s.repo.DeletePipeline(ctx, projectID, pl.UUID, ev) })
}

// deleted runs a deletion that keeps ev, and publishes ev once it is done.
func (s *Service) deleted(ctx context.Context, ev outbox.Event, del func() (outbox.Ref, error)) error {
	ref, err := del()
	if err != nil {
		return err
	}
	s.events.Dispatch(ctx, ref, ev)
	return nil
}

// CreateStage adds an open stage to a pipeline (at the end of its open stages unless sort_order
// says where).
func (s *Service) CreateStage(ctx context.Context, projectID, botID string, in StageInput) (Stage, error) {
	var p apperr.Problems
	name := checkName(&p, "name", in.Name, true)
	checkProbability(&p, "probability", in.Probability)
	if strings.TrimSpace(in.PipelineID) == "" {
		p.Add("pipeline_id", "is required")
	}
	if err := p.Err(); err != nil {
		return Stage{}, err
	}
	pl, err := s.pipeline(ctx, projectID, in.PipelineID)
	if err != nil {
		return Stage{}, err
	}
	if _, dup := pipeline(pl.Stages).named(name, ""); dup {
		return Stage{}, stageExists("name", name)
	}
	order, open := 0, 0
	for _, st := range pl.Stages {
		if st.Outcome == StatusOpen {
			order = max(order, st.SortOrder)
			open++
		}
	}
	if open >= MaxStages {
		return Stage{}, apperr.Invalidf("stages", "the pipeline has %d open stages already, the most it may have", MaxStages)
	}
	st := Stage{UUID: ids.New(), ProjectID: projectID, PipelineID: pl.UUID, Name: name,
		Probability: orInt(in.Probability, 10), SortOrder: orInt(in.SortOrder, order+1), Outcome: StatusOpen}
	stored := st
	if pl.IsDefault {
		stored.PipelineID = ""
	}
	ev := stageEvents.New(ctx, outbox.StageCreated, projectID, botID, st)
	if err := s.repo.InsertStage(ctx, stored, &ev); err != nil {
		return Stage{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: StageResource, ID: st.UUID}, ev)
	return st, nil
}

// UpdateStage changes a stage's name, probability or place.
func (s *Service) UpdateStage(ctx context.Context, projectID, botID, id string, in StageInput) (Stage, error) {
	var p apperr.Problems
	name := checkName(&p, "name", in.Name, false)
	checkProbability(&p, "probability", in.Probability)
	if err := p.Err(); err != nil {
		return Stage{}, err
	}
	stages, err := s.Stages(ctx, projectID)
	if err != nil {
		return Stage{}, err
	}
	st := pipeline(stages).byID(strings.TrimSpace(id))
	if st.UUID == "" {
		return Stage{}, apperr.NotFoundf("stage")
	}
	if name != "" {
		if _, dup := pipelineFor(stages, st.PipelineID, nil).named(name, st.UUID); dup {
			return Stage{}, stageExists("name", name)
		}
		st.Name = name
	}
	st.Probability, st.SortOrder = orInt(in.Probability, st.Probability), orInt(in.SortOrder, st.SortOrder)
	stored := st
	if stored.PipelineID == DefaultPipelineID(projectID) {
		stored.PipelineID = ""
	}
	ev := stageEvents.New(ctx, outbox.StageUpdated, projectID, botID, st)
	if err := s.repo.ReplaceStage(ctx, stored, ev); err != nil {
		return Stage{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: StageResource, ID: st.UUID}, ev)
	return st, nil
}

// DeleteStage removes a stage. Its deals move to moveTo first (a stage of the project); a
// stage with deals and nowhere to move them, or the last won or lost stage of its pipeline,
// stays (Conflict).
func (s *Service) DeleteStage(ctx context.Context, projectID, botID, id, moveTo string) error {
	stages, err := s.Stages(ctx, projectID)
	if err != nil {
		return err
	}
	st := pipeline(stages).byID(strings.TrimSpace(id))
	if st.UUID == "" {
		return apperr.NotFoundf("stage")
	}
	if st.Outcome != StatusOpen {
		same := 0
		for _, o := range pipelineFor(stages, st.PipelineID, nil) {
			if o.Outcome == st.Outcome {
				same++
			}
		}
		if same == 1 {
			return apperr.New(apperr.Conflict, "stage_required", "A pipeline keeps one "+st.Outcome+" stage.")
		}
	}
	moveTo = strings.TrimSpace(moveTo)
	for {
		deals, n, err := s.repo.Deals(ctx, DealFilter{ProjectID: projectID, StageIDs: []string{st.UUID}}, paging.Page{Page: 1, PerPage: paging.MaxPerPage})
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if moveTo == "" || moveTo == st.UUID {
			return apperr.New(apperr.Conflict, "stage_in_use", "Deals are in this stage: give move_deals_to_stage_id.")
		}
		target := pipeline(stages).byID(moveTo)
		if target.UUID == "" {
			return apperr.Invalidf("move_deals_to_stage_id", "must be the uuid of another stage of the project")
		}
		for _, d := range deals {
			if _, err := s.UpdateDeal(ctx, projectID, d.BotID, d.UUID, DealInput{Stage: &target.UUID}); err != nil {
				return err
			}
		}
	}
	ev := stageEvents.New(ctx, outbox.StageDeleted, projectID, botID, st)
	return s.deleted(ctx, ev, func() (outbox.Ref, error) { return s.repo.DeleteStage(ctx, projectID, st.UUID, ev) })
}

package crm

import (
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// stageNamespace makes stage ids deterministic: the same project and name always give the same
// id, so concurrent first uses of a pipeline create each stage once.
var stageNamespace = uuid.MustParse("6f1c2a8e-5b7d-4c1e-9a3f-2d8e7b6c5a40")

// defaultStages is the pipeline every project starts with.
func defaultStages(projectID string) []Stage {
	stages := []Stage{
		{Name: "Lead", Probability: 10, Outcome: StatusOpen},
		{Name: "Qualified", Probability: 25, Outcome: StatusOpen},
		{Name: "Proposal", Probability: 50, Outcome: StatusOpen},
		{Name: "Negotiation", Probability: 75, Outcome: StatusOpen},
		{Name: "Won", Probability: 100, Outcome: StatusWon},
		{Name: "Lost", Probability: 0, Outcome: StatusLost},
	}
	for i := range stages {
		stages[i].UUID = uuid.NewSHA1(stageNamespace, []byte(projectID+"/"+stages[i].Name)).String()
		stages[i].ProjectID = projectID
		stages[i].SortOrder = i + 1
	}
	return stages
}

// pipeline is a project's stages in order.
type pipeline []Stage

// find returns the stage named (case-insensitively) or with the uuid ref.
func (p pipeline) find(ref string) (Stage, bool) {
	ref = strings.TrimSpace(ref)
	for _, s := range p {
		if s.UUID == ref || strings.EqualFold(s.Name, ref) {
			return s, true
		}
	}
	return Stage{}, false
}

// named returns the stage whose name is name, case-insensitively, other than the stage except
// (none when empty).
func (p pipeline) named(name, except string) (Stage, bool) {
	for _, s := range p {
		if (except == "" || s.UUID != except) && strings.EqualFold(s.Name, strings.TrimSpace(name)) {
			return s, true
		}
	}
	return Stage{}, false
}

// stageExists is the answer to a stage name a pipeline has already (Won and Lost included).
func stageExists(field, name string) error {
	return &apperr.Error{Kind: apperr.Conflict, Code: "stage_exists", Message: "The pipeline has a stage of that name.",
		Details: []apperr.Detail{{Field: field, Problem: "the pipeline already has a stage named " + strconv.Quote(name) + " (names are compared case-insensitively; Won and Lost are its closing stages)"}}}
}

// byID returns the stage with id.
func (p pipeline) byID(id string) Stage {
	for _, s := range p {
		if s.UUID == id {
			return s
		}
	}
	return Stage{}
}

// first returns the first stage whose outcome is status: where a deal of that status goes.
func (p pipeline) first(status string) Stage {
	for _, s := range p {
		if s.Outcome == status {
			return s
		}
	}
	return Stage{}
}

// names lists the stage names, for error messages.
func (p pipeline) names() string {
	names := make([]string, len(p))
	for i, s := range p {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

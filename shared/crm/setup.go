package crm

import (
	"context"
	"slices"
)

// Setup is what an agent's CRM has: the project's pipelines with their stages, custom fields and
// contact statuses, the templates its pipelines were made from, and how much it holds.
type Setup struct {
	Pipelines        []Pipeline      `json:"pipelines"`
	Fields           []Field         `json:"fields"`
	Statuses         []ContactStatus `json:"statuses"`
	TemplatesApplied []string        `json:"templates_applied"`
	Counts           SetupCounts     `json:"counts"`
}

// SetupCounts counts the project's contacts, pipelines, stages and fields, and the agent's deals
// (by status) and tasks.
type SetupCounts struct {
	Contacts  int `json:"contacts"`
	Pipelines int `json:"pipelines"`
	Stages    int `json:"stages"`
	Fields    int `json:"fields"`
	Deals     int `json:"deals"`
	OpenDeals int `json:"open_deals"`
	WonDeals  int `json:"won_deals"`
	LostDeals int `json:"lost_deals"`
	Tasks     int `json:"tasks"`
	OpenTasks int `json:"open_tasks"`
}

// Setup describes the agent's CRM.
func (s *Service) Setup(ctx context.Context, projectID, botID string) (Setup, error) {
	pipelines, err := s.Pipelines(ctx, projectID)
	if err != nil {
		return Setup{}, err
	}
	fields, err := s.repo.Fields(ctx, projectID)
	if err != nil {
		return Setup{}, err
	}
	statuses, err := s.ContactStatuses(ctx, projectID)
	if err != nil {
		return Setup{}, err
	}
	out := Setup{Pipelines: pipelines, Fields: fields, Statuses: statuses, TemplatesApplied: []string{}}
	if out.Fields == nil {
		out.Fields = []Field{}
	}
	outcome := map[string]string{}
	for _, p := range pipelines {
		if p.TemplateKey != "" && !slices.Contains(out.TemplatesApplied, p.TemplateKey) {
			out.TemplatesApplied = append(out.TemplatesApplied, p.TemplateKey)
		}
		for _, st := range p.Stages {
			outcome[st.UUID] = st.Outcome
		}
		out.Counts.Stages += len(p.Stages)
	}
	out.Counts.Pipelines, out.Counts.Fields = len(pipelines), len(fields)
	totals, err := s.repo.DealTotals(ctx, DealFilter{ProjectID: projectID, BotID: botID})
	if err != nil {
		return Setup{}, err
	}
	for _, t := range totals {
		out.Counts.Deals += t.Count
		switch outcome[t.StageID] {
		case StatusWon:
			out.Counts.WonDeals += t.Count
		case StatusLost:
			out.Counts.LostDeals += t.Count
		default:
			out.Counts.OpenDeals += t.Count
		}
	}
	if out.Counts.Contacts, err = s.repo.CountContacts(ctx, projectID); err != nil {
		return Setup{}, err
	}
	if out.Counts.Tasks, err = s.repo.CountTasks(ctx, TaskFilter{ProjectID: projectID, BotID: botID}); err != nil {
		return Setup{}, err
	}
	out.Counts.OpenTasks, err = s.repo.CountTasks(ctx, TaskFilter{ProjectID: projectID, BotID: botID, Status: TaskOpen})
	return out, err
}

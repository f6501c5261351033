package crm

import (
	"context"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/paging"
)

// DealTotal is how many deals of one currency a stage holds and the sum of their values.
type DealTotal struct {
	StageID  string `bson:"stage_id"`
	Currency string `bson:"currency"`
	Count    int    `bson:"count"`
	Value    int64  `bson:"value"`
}

// Board is a pipeline as a board: its stages in order, each with a page of its deals.
type Board struct {
	Pipeline BoardPipeline `json:"pipeline"`
	Stages   []BoardStage  `json:"stages"`
	// Total is how many deals of the agent the pipeline holds.
	Total int `json:"total"`
}

// BoardPipeline names the board's pipeline.
type BoardPipeline struct {
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	IsDefault bool   `json:"is_default"`
}

// BoardStage is one column of a board: a stage, a page of its deals (oldest first), how many
// deals it holds and the sum of their values in each currency.
type BoardStage struct {
	Stage
	Status          string            `json:"status"`
	Deals           []View            `json:"deals"`
	DealCount       int               `json:"deal_count"`
	ValueByCurrency map[string]int64  `json:"value_by_currency"`
	Pagination      paging.Pagination `json:"pagination"`
}

// Board returns the agent's deals in the pipeline pipelineID (the project's default pipeline
// when empty): page applies to each stage's deals.
func (s *Service) Board(ctx context.Context, projectID, botID, pipelineID string, page paging.Page) (Board, error) {
	if pipelineID = strings.TrimSpace(pipelineID); pipelineID == "" {
		pipelineID = DefaultPipelineID(projectID)
	}
	pl, err := s.pipeline(ctx, projectID, pipelineID)
	if err != nil {
		return Board{}, err
	}
	ids := make([]string, len(pl.Stages))
	for i, st := range pl.Stages {
		ids[i] = st.UUID
	}
	totals, err := s.repo.DealTotals(ctx, DealFilter{ProjectID: projectID, BotID: botID, StageIDs: ids})
	if err != nil {
		return Board{}, err
	}
	board := Board{Pipeline: BoardPipeline{UUID: pl.UUID, Name: pl.Name, IsDefault: pl.IsDefault}, Stages: make([]BoardStage, 0, len(pl.Stages))}
	for _, st := range pl.Stages {
		col := BoardStage{Stage: st, Status: st.Outcome, Deals: []View{}, ValueByCurrency: map[string]int64{}}
		for _, t := range totals {
			if t.StageID == st.UUID {
				col.DealCount += t.Count
				col.ValueByCurrency[t.Currency] += t.Value
			}
		}
		if col.DealCount > 0 && page.Skip() < int64(col.DealCount) {
			deals, _, err := s.repo.Deals(ctx, DealFilter{ProjectID: projectID, BotID: botID, StageIDs: []string{st.UUID}}, page)
			if err != nil {
				return Board{}, err
			}
			if col.Deals, err = s.views(ctx, projectID, deals); err != nil {
				return Board{}, err
			}
		}
		col.Pagination = page.Of(col.DealCount)
		board.Total += col.DealCount
		board.Stages = append(board.Stages, col)
	}
	return board, nil
}
